"""The deferred-tools section of the system prompt, generated from what was injected.

It names only meta-tools that are really in the request, then lists the deferred namespaces by label
(never internal ids) with tool counts, a one-line summary of each (or its first few tools by wire
name, the name a model calls), and the state of MCP servers that are cold or failing, so the model
can tell "configured but failing" from "absent". The text is deterministic. To stay cheap with many
namespaces it degrades to fit ``budget`` tokens: first summaries go, then namespaces beyond the
largest are folded into a pointer to ``tool_search`` (which lists them all); server problems are
always shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pegboard.core.entry import ToolEntry
from pegboard.core.names import is_mcp_namespace, mcp_namespace, strip_mcp_namespace
from pegboard.core.redact import escape_markup
from pegboard.core.status import NamespaceStatus
from pegboard.core.tokens import TokenCounter, default_token_counter
from pegboard.core.wording import plural
from pegboard.sandbox.tool import EXEC_PROMPT_LINE

PROMPT_SECTION_BUDGET_TOKENS = 400
SUMMARY_NAMES = 4
PROBLEM_STATES = frozenset({"cold", "connecting", "failed"})

USAGE: Mapping[str, str] = {
    "tool_search": "tool_search({query?, namespace?, limit?, verbose?}): ranked search over "
    "these tools; for a task of several steps, pass one query per step; no query browses",
    "tool_inspect": "tool_inspect({name}): a tool's signature (JSDoc stub)",
    "tool_invoke": "tool_invoke({name, params}): call a tool; inspect first unless you know "
    "its params",
    "tool_exec": EXEC_PROMPT_LINE,
}
INSPECT_USAGE_EXEC = "tool_inspect({name}): a tool's signature (the Python function code calls)"

NATIVE_LOADING = "tools that tool_search finds are loaded for you: call them directly by name"


@dataclass(frozen=True, slots=True)
class _Namespace:
    raw: str
    label: str
    names: tuple[str, ...]
    status: NamespaceStatus | None


def render_deferred_section(
    injected: Sequence[str],
    deferred: Sequence[ToolEntry],
    *,
    statuses: Mapping[str, NamespaceStatus] | None = None,
    counter: TokenCounter | None = None,
    budget: int = PROMPT_SECTION_BUDGET_TOKENS,
    loads_found_tools: bool = False,
) -> str:
    """The ``<deferred-tools>`` section; empty when no meta-tool was injected.

    ``statuses`` are keyed by raw namespace (``mcp:<server id>``).
    ``loads_found_tools``: the provider loads what ``tool_search`` finds (Anthropic's native
    deferred loading), so found tools are called directly.
    """
    usage = [f"- {_usage(name, injected)}" for name in injected if name in USAGE]
    if not usage:
        return ""
    if loads_found_tools:
        usage.append(f"- {NATIVE_LOADING}")
    counter = counter or default_token_counter()
    spaces = _namespaces(deferred, statuses or {})
    head = [
        "<deferred-tools>",
        "More tools are available than are loaded. Find and call them with:",
        *usage,
        "<namespaces>",
    ]
    tail = ["</namespaces>", "</deferred-tools>"]
    problems = [_problem_line(ns) for ns in spaces if _has_problem(ns)]
    full = [_full_line(ns) for ns in spaces if ns.names]
    for body in (full, _counts_lines(spaces)):
        text = "\n".join([*head, *body, *problems, *tail])
        if counter.count_text(text) <= budget:
            return text
    return "\n".join([*head, *_fit_largest(head, tail, spaces, problems, counter, budget), *tail])


def _usage(name: str, injected: Sequence[str]) -> str:
    if name == "tool_inspect" and "tool_exec" in injected:
        return INSPECT_USAGE_EXEC
    return USAGE[name]


def _namespaces(
    deferred: Sequence[ToolEntry], statuses: Mapping[str, NamespaceStatus]
) -> list[_Namespace]:
    members: dict[str, list[ToolEntry]] = {}
    for entry in deferred:
        members.setdefault(entry.namespace, []).append(entry)
    raws = set(members) | {raw for raw, s in statuses.items() if s.state in PROBLEM_STATES}
    spaces = []
    for raw in raws:
        entries = sorted(members.get(raw, []), key=lambda e: e.name)
        status = statuses.get(raw)
        label = entries[0].label if entries else (status.label if status else raw)
        # Server-supplied text is escaped: nothing may close the wrapper and speak as us.
        label = escape_markup(label)
        names = tuple(escape_markup(e.name) for e in entries)  # the names to call
        spaces.append(_Namespace(raw, label, names, status))
    return sorted(spaces, key=lambda ns: (ns.label, ns.raw))


def _has_problem(ns: _Namespace) -> bool:
    return ns.status is not None and ns.status.state in PROBLEM_STATES


def _full_line(ns: _Namespace) -> str:
    shown = sorted(ns.names)[:SUMMARY_NAMES]
    text = ", ".join(shown) + (", …" if len(ns.names) > SUMMARY_NAMES else "")
    return f"- {ns.label} ({len(ns.names)}): {text}"


def _counts_lines(spaces: Sequence[_Namespace]) -> list[str]:
    """Compact ``label (count)`` lists; MCP servers share one ``mcp:`` prefix."""
    listed = [ns for ns in spaces if ns.names]
    other = [_count(ns) for ns in listed if not is_mcp_namespace(ns.label)]
    servers = [_count(ns) for ns in listed if is_mcp_namespace(ns.label)]
    lines = [", ".join(other)] if other else []
    if servers:
        lines.append(f"MCP servers (namespace {mcp_namespace('<name>')}): " + ", ".join(servers))
    return lines


def _count(ns: _Namespace) -> str:
    return f"{strip_mcp_namespace(ns.label)} ({len(ns.names)})"


def _problem_line(ns: _Namespace) -> str:
    assert ns.status is not None
    detail = f": {escape_markup(ns.status.detail)}" if ns.status.detail else ""
    what = {"cold": "not connected yet", "connecting": "connecting", "failed": "failing"}
    state = what.get(ns.status.state, ns.status.state)
    # A failing server's cached tools are still listed (and may work again); a server never
    # listed has none to show yet.
    effect = "its cached tools may be stale" if ns.names else "its tools may be missing"
    return f"- {ns.label}: server {state}{detail}; {effect}"


def _fit_largest(
    head: list[str],
    tail: list[str],
    spaces: Sequence[_Namespace],
    problems: list[str],
    counter: TokenCounter,
    budget: int,
) -> list[str]:
    ranked = sorted((ns for ns in spaces if ns.names), key=lambda ns: (-len(ns.names), ns.label))
    fixed = counter.count_text("\n".join([*head, *problems, *tail, _more_line(ranked, 0)]))
    kept: list[_Namespace] = []
    used = fixed
    for ns in ranked:
        cost = counter.count_text(f"{_count(ns)}, ")
        if used + cost > budget:
            break
        kept.append(ns)
        used += cost
    kept.sort(key=lambda ns: (ns.label, ns.raw))
    rest = ranked[len(kept) :]
    body = _counts_lines(kept)
    more = [_more_line(rest, len(rest))] if rest else []
    return [*body, *more, *problems]


def _more_line(rest: Sequence[_Namespace], count: int) -> str:
    tools = sum(len(ns.names) for ns in rest)
    return (
        f"… and {count} more namespaces ({plural(tools, 'tool')}): "
        "call tool_search with no query to list them all"
    )

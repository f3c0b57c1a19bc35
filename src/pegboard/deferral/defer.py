"""Which tools to defer behind the meta-tools, and what deferring costs.

``always`` entries are deferred, ``never`` entries stay inline, and the ``auto`` pool is
deferred all together or not at all: only when it has at least :data:`MIN_AUTO_DEFER_COUNT`
entries and its token cost exceeds both :data:`DEFER_THRESHOLD_PCT` of the context window and
the measured overhead of deferring (the injected meta-tool definitions plus the prompt section
that would list the deferred tools).

Approval-gated tools stay inline (the user is asked before they run), except those gated only
by the default rule of the destructive hint (``needs_approval=True`` on a tool annotated
``destructiveHint``): they are deferred like any other, since every route authorises at call
time (a direct call by wire name asks; ``tool_invoke`` asks where the route can, refuses where
it cannot). Force-prompted tools are registered ``defer="never"`` and so stay inline, as in
the reference design.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pegboard.calls.approval import may_need_approval
from pegboard.core.entry import ToolEntry
from pegboard.core.status import NamespaceStatus
from pegboard.core.tokens import TokenCounter, count_entries, default_token_counter
from pegboard.core.tool import is_destructive
from pegboard.deferral.definitions import DEFINITIONS, EXEC_DEFINITIONS, injected_meta_tools
from pegboard.deferral.prompt import render_deferred_section

DEFER_THRESHOLD_PCT = 10
# Assumed when neither the caller nor the config names the model's window. pegboard serve's
# clients (Claude Desktop, Claude Code, Cursor, VS Code) mostly run 200k-token models
# (Claude; GPT-4.1 and Gemini have more, GPT-4o 128k), so 200000 fits them; a small local
# model sets its own with --context-window or context_window in the config.
DEFAULT_CONTEXT_WINDOW = 200_000
MIN_AUTO_DEFER_COUNT = 5


@dataclass(frozen=True, slots=True)
class DeferDecision:
    """The outcome of :func:`should_defer`.

    ``auto_cost`` and ``overhead`` are None when the gate that needs them was not reached.
    """

    names: frozenset[str]
    threshold: int
    auto_cost: int | None = None
    overhead: int | None = None


def defer_threshold(context_window: int | None) -> int:
    window = context_window if context_window and context_window > 0 else DEFAULT_CONTEXT_WINDOW
    return window * DEFER_THRESHOLD_PCT // 100


def meta_tools_overhead_tokens(
    deferred: Sequence[ToolEntry] = (),
    counter: TokenCounter | None = None,
    *,
    statuses: Mapping[str, NamespaceStatus] | None = None,
    tool_exec: bool = False,
) -> int:
    """Measured tokens of the injected meta-tool definitions (``tool_exec``'s too when it is
    on) plus the prompt section that would enumerate ``deferred``."""
    counter = counter or default_token_counter()
    names = injected_meta_tools(tool_exec)
    definitions = EXEC_DEFINITIONS if tool_exec else DEFINITIONS
    tools = sum(counter.count_tool(definitions[name]) for name in names)
    section = render_deferred_section(names, deferred, statuses=statuses, counter=counter)
    return tools + counter.count_text(section)


def stays_inline(entry: ToolEntry) -> bool:
    """Whether ``entry``'s approval gate keeps it inline whatever its ``defer`` policy.

    A gate of the destructive hint alone (``needs_approval=True`` and ``destructiveHint``)
    does not: that tool is asked for when called, from wherever it is called. Any other gate
    (an explicit ``True``, a callable policy) does.
    """
    tool = entry.tool
    if not may_need_approval(tool):
        return False
    return not (tool.needs_approval is True and is_destructive(tool.annotations))


def should_defer(
    entries: Sequence[ToolEntry],
    context_window: int | None,
    counter: TokenCounter | None = None,
    *,
    statuses: Mapping[str, NamespaceStatus] | None = None,
    sticky: bool = False,
    tool_exec: bool = False,
) -> DeferDecision:
    """Decide which of ``entries`` to defer; see the module docstring for the rules.

    ``sticky`` (the auto pool was deferred earlier in this conversation) drops the
    context-window gate, so a pool hovering around 10% of the window does not flip all its
    tools in and out from turn to turn and churn the provider's prompt cache; the count and
    overhead gates still apply. ``tool_exec`` (it would be injected) counts its definition
    in the overhead.
    """
    threshold = defer_threshold(context_window)
    eligible = [e for e in entries if not stays_inline(e)]
    always = [e for e in eligible if e.defer == "always"]
    auto = [e for e in eligible if e.defer == "auto"]
    names = {e.name for e in always}
    if len(auto) < MIN_AUTO_DEFER_COUNT:
        return DeferDecision(frozenset(names), threshold)
    counter = counter or default_token_counter()
    cost = count_entries(auto, counter)
    if cost <= threshold and not sticky:
        return DeferDecision(frozenset(names), threshold, auto_cost=cost)
    overhead = meta_tools_overhead_tokens(
        [*always, *auto],
        counter,
        statuses=statuses,
        tool_exec=tool_exec,
    )
    if cost > overhead:
        names.update(e.name for e in auto)
    return DeferDecision(frozenset(names), threshold, auto_cost=cost, overhead=overhead)


def __getattr__(name: str) -> Any:
    # META_TOOLS_OVERHEAD_TOKENS is measured (meta-tools + an empty-pool prompt section with
    # the default counter) on first access, never hard-coded.
    if name == "META_TOOLS_OVERHEAD_TOKENS":
        return meta_tools_overhead_tokens()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

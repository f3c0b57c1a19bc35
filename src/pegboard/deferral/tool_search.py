"""``tool_search``: ranked discovery over the deferred pool, as compact text.

Hits are grouped by namespace label (groups in order of their best hit, hits in rank order),
one line per tool: ``- <name>: <summary>``, each line capped at :data:`MAX_LINE_TOKENS`.
No query browses: a namespace lists its tools, no namespace lists the namespaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pegboard.core.definition import canonical_json
from pegboard.core.entry import ToolEntry
from pegboard.core.output import TextPart, ToolOutput
from pegboard.core.tokens import TokenCounter
from pegboard.core.tool import Tool, ToolContext
from pegboard.deferral.definitions import DEFAULT_SEARCH_LIMIT, SEARCH_DESCRIPTION, SEARCH_SCHEMA
from pegboard.deferral.pool import DeferredPool

MAX_LINE_TOKENS = 60
TOOL_REFERENCES = "tool_references"
"""``ToolOutput.metadata`` key: the names a search found (Anthropic native loading sends them
as ``tool_reference`` blocks)."""
_ELLIPSIS = "…"
_BROADEN = (
    "Try fewer or more general words, another phrasing, a list of phrasings, no `namespace`, "
    "or tool_search with no query to browse the namespaces."
)


def make_tool_search(pool: DeferredPool) -> Tool:
    """The ``tool_search`` tool of one request."""

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return search_pool(
            pool,
            _queries(args.get("query")),
            namespace=args.get("namespace"),
            limit=int(args.get("limit", DEFAULT_SEARCH_LIMIT)),
            verbose=bool(args.get("verbose", False)),
        )

    return Tool(description=SEARCH_DESCRIPTION, input_schema=SEARCH_SCHEMA, execute=execute)


def search_pool(
    pool: DeferredPool,
    queries: Sequence[str],
    *,
    namespace: str | None = None,
    limit: int = DEFAULT_SEARCH_LIMIT,
    verbose: bool = False,
) -> ToolOutput:
    """Run one ``tool_search`` over ``pool`` and render the model-facing text."""
    raw_namespaces: frozenset[str] | None = None
    if namespace:
        raw_namespaces = pool.resolve_namespace(namespace)
        if not raw_namespaces:
            known = ", ".join(pool.namespaces().values()) or "(none)"
            return ToolOutput.text(f"No namespace matches {namespace!r}. Namespaces: {known}.")
    if not queries:
        if raw_namespaces is None:
            return ToolOutput.text(_overview(pool))
        members = [e for e in pool.deferred if e.namespace in raw_namespaces]
        text = _render(pool, members[:limit], verbose)
        if len(members) > limit:
            text += f"\n({limit} of {len(members)} shown; raise `limit` or add a query.)"
        return ToolOutput.text(text)
    hits = pool.index.search(
        list(queries),
        limit=limit,
        namespaces=sorted(raw_namespaces) if raw_namespaces is not None else None,
        allowed=pool.deferred_names,
    )
    # A zero score is no match at all (some rankers pad results); never show those.
    found = [e for hit in hits if hit.score > 0 and (e := pool.lookup(hit.name)) is not None]
    if not found:
        where = f" in {namespace}" if namespace else ""
        shown = " | ".join(queries)
        return ToolOutput.text(f"No deferred tool matches {shown!r}{where}. {_BROADEN}")
    text = _render(pool, found, verbose)
    refs = tuple(entry.name for entry in found)
    return ToolOutput(parts=(TextPart(text),), metadata={TOOL_REFERENCES: refs})


def _queries(value: Any) -> list[str]:
    items = [value] if isinstance(value, str) else list(value or [])
    return [q.strip() for q in items if isinstance(q, str) and q.strip()]


def _overview(pool: DeferredPool) -> str:
    counts: dict[str, int] = {}
    for entry in pool.deferred:
        counts[entry.label] = counts.get(entry.label, 0) + 1
    lines = [f"- {label} ({n} tool{'s' * (n != 1)})" for label, n in sorted(counts.items())]
    hint = "Search with a query, or pass `namespace` to list one namespace."
    return "\n".join([f"{len(counts)} namespaces of deferred tools:", *lines, hint])


def _render(pool: DeferredPool, entries: Sequence[ToolEntry], verbose: bool) -> str:
    groups: dict[str, list[ToolEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.label, []).append(entry)
    lines: list[str] = []
    for label, members in groups.items():
        lines.append(f"[{label}]")
        for entry in members:
            lines.append(tool_line(entry, pool.counter))
            if verbose:
                lines.append(f"  input: {canonical_json(entry.tool.input_schema)}")
                pool.ledger.record(entry)
    return "\n".join(lines)


def tool_line(entry: ToolEntry, counter: TokenCounter, max_tokens: int = MAX_LINE_TOKENS) -> str:
    """``- name: summary``, the summary cut (with an ellipsis) to fit ``max_tokens``."""
    summary = entry.summary or "(no description)"
    line = f"- {entry.name}: {summary}"
    tokens = counter.count_text(line)
    while tokens > max_tokens and summary:
        keep = max(0, int(len(summary) * max_tokens / tokens) - 2)
        summary = summary[:keep].rstrip()
        line = f"- {entry.name}: {summary}{_ELLIPSIS}" if summary else f"- {entry.name}"
        tokens = counter.count_text(line)
    return line

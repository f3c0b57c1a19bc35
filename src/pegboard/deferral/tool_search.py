"""``tool_search``: ranked discovery over the deferred pool, as compact text.

Hits are grouped by namespace label (groups in order of their best hit, hits in rank order),
one line per tool: ``- <name>: <summary>``, each line capped at :data:`MAX_LINE_TOKENS`.
No query browses, a page at a time (``offset``): a namespace lists its tools by name; no
namespace puts the namespace overview on top of the first page of every deferred tool, so a
model that omits the query gets tools in one call. Every answer also carries a structured form
(``ToolOutput.structured``: the MCP ``structuredContent``) so code can read it.

A search runs in a worker thread: the first one after a start may wait for the index to be
loaded or built (:mod:`pegboard.search.stored`), and the event loop goes on serving meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from pegboard.core.definition import canonical_json
from pegboard.core.entry import ToolEntry
from pegboard.core.output import TextPart, ToolOutput
from pegboard.core.tokens import TokenCounter
from pegboard.core.tool import Tool, ToolContext
from pegboard.core.wording import plural
from pegboard.deferral.definitions import DEFAULT_SEARCH_LIMIT, SEARCH_DESCRIPTION, SEARCH_SCHEMA
from pegboard.deferral.pool import DeferredPool
from pegboard.deferral.search_text import Found, grouped_text, rows

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
        import anyio.to_thread  # here: `pegboard tools search` never runs an event loop

        search = partial(
            search_pool,
            pool.seen_by(ctx),
            _queries(args.get("query")),
            namespace=args.get("namespace"),
            limit=int(args.get("limit", DEFAULT_SEARCH_LIMIT)),
            verbose=bool(args.get("verbose", False)),
            offset=int(args.get("offset", 0)),
        )
        return await anyio.to_thread.run_sync(search)

    return Tool(description=SEARCH_DESCRIPTION, input_schema=SEARCH_SCHEMA, execute=execute)


def search_pool(
    pool: DeferredPool,
    queries: Sequence[str],
    *,
    namespace: str | None = None,
    limit: int = DEFAULT_SEARCH_LIMIT,
    verbose: bool = False,
    offset: int = 0,
) -> ToolOutput:
    """Run one ``tool_search`` over ``pool`` and render the model-facing text.

    ``offset`` pages through a browse (no query); a ranked search ignores it.
    """
    raw_namespaces: frozenset[str] | None = None
    if namespace:
        raw_namespaces = pool.resolve_namespace(namespace)
        if not raw_namespaces:
            known = ", ".join(pool.namespaces().values()) or "(none)"
            return ToolOutput.text(f"No namespace matches {namespace!r}. Namespaces: {known}.")
    if not queries:
        return _browse(pool, raw_namespaces, limit=limit, offset=max(0, offset), verbose=verbose)
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
        text = f"No deferred tool matches {shown!r}{where}. {_BROADEN}"
        return ToolOutput(parts=(TextPart(text),), structured={"tools": []})
    text = _render(pool, found, verbose)
    refs = tuple(entry.name for entry in found)
    return ToolOutput(
        parts=(TextPart(text),),
        structured={"tools": _rows(found)},
        metadata={TOOL_REFERENCES: refs},
    )


def _browse(
    pool: DeferredPool,
    raw_namespaces: frozenset[str] | None,
    *,
    limit: int,
    offset: int,
    verbose: bool,
) -> ToolOutput:
    """One page of the deferred tools (of ``raw_namespaces``, else all) in name order, under
    the namespace overview when no namespace was chosen."""
    if raw_namespaces is None:
        members = sorted(pool.deferred, key=lambda e: (e.label, e.name))
    else:
        members = [e for e in pool.deferred if e.namespace in raw_namespaces]
    page = members[offset : offset + limit]
    blocks = [_overview(pool)] if raw_namespaces is None and offset == 0 else []
    if page:
        blocks.append(_render(pool, page, verbose))
    end = offset + len(page)
    if end < len(members):
        blocks.append(
            f"({offset + 1}-{end} of {len(members)} shown; pass offset={end} for more, "
            "or add a query.)"
        )
    elif not page:
        blocks.append(f"(offset {offset} is past the last of {plural(len(members), 'tool')}.)")
    structured: dict[str, Any] = {
        "tools": _rows(page),
        "offset": offset,
        "total": len(members),
    }
    if raw_namespaces is None:
        structured["namespaces"] = [
            {"namespace": label, "count": n} for label, n in _counts(pool).items()
        ]
    return ToolOutput(parts=(TextPart("\n".join(blocks)),), structured=structured)


def _rows(entries: Sequence[ToolEntry]) -> list[dict[str, str]]:
    return rows([(e.name, e.label, "", e.summary) for e in entries])


def _queries(value: Any) -> list[str]:
    items = [value] if isinstance(value, str) else list(value or [])
    return [q.strip() for q in items if isinstance(q, str) and q.strip()]


def _counts(pool: DeferredPool) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in pool.deferred:
        counts[entry.label] = counts.get(entry.label, 0) + 1
    return dict(sorted(counts.items()))


def _overview(pool: DeferredPool) -> str:
    counts = _counts(pool)
    lines = [f"- {label} ({plural(n, 'tool')})" for label, n in counts.items()]
    hint = "Search with a query, or pass `namespace` to list one namespace."
    return "\n".join([f"{len(counts)} namespaces of deferred tools:", *lines, hint])


def _render(pool: DeferredPool, entries: Sequence[ToolEntry], verbose: bool) -> str:
    found = [(e.name, e.label, tool_line(e, pool.counter), e.summary) for e in entries]
    schemas = [[f"  input: {canonical_json(e.tool.input_schema)}"] for e in entries]
    return grouped_text(found, schemas if verbose else ())


def found_lines(pool: DeferredPool) -> list[Found]:
    """Every deferred tool of ``pool`` as a hit would show it (the ready snapshot's lines)."""
    return [(e.name, e.label, tool_line(e, pool.counter), e.summary) for e in pool.deferred]


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

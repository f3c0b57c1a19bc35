"""Readying ``tool_search``'s index in the background once the gateway has answered.

The index (BM25F over every tool plus the embedding tables) is readied by its first search
otherwise, on the event loop: loaded from the data directory (tens of ms) when this catalog
was indexed before (:mod:`pegboard.search.stored`), else built (1-2.5 s at 527-4,800 tools).
Here that happens in a worker thread right after the first client has been answered (or after
:data:`ANSWER_WAIT_S` without a client), so the first search costs what later ones do.
Nothing is built when no tool is deferred (``--no-defer``, or a pool that fits): no search
meta-tool is offered then, and the tables would only take memory.

Then the search line of every deferred tool is counted (:func:`count_search_lines`): a search
caps each line at a token budget, and a line never counted before would load the tokenizer
(0.1-0.8 s, 70 MB) during the search. Counted here, in the background, the counts are kept in
the data directory with the others, so a later start's searches load no tokenizer at all.
And the meta-tools' argument checks are compiled (:func:`compile_meta_tool_checks`): a call's
arguments are validated against its tool's schema, and the first check of a schema compiles
it (jsonschema's metaschema check: 5-8 ms of CPU for tool_search's, the import aside), and its
quick check's first use generates code (fastjsonschema's import and compile: ~9 ms of the
event loop's CPU), which made the first search after an idle start x3-x5 slower than the
later ones.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from pegboard.core.output import ToolOutput
    from pegboard.search.interface import SearchIndex
    from pegboard.toolsets.exposure import RegistrySurface

logger = logging.getLogger("pegboard.gateway")

ANSWER_WAIT_S = 2.0


def searching(surface: RegistrySurface) -> bool:
    """Whether the surface offers ``tool_search`` now (some tools are deferred)."""
    exposition = surface.exposition
    return surface.defer and exposition is not None and bool(exposition.deferred)


def count_search_lines(surface: RegistrySurface) -> None:
    """Count (so the counter remembers, and keeps) the ``tool_search`` line of each tool
    ``surface`` defers now."""
    from pegboard.deferral.tool_search import tool_line

    exposition = surface.exposition
    pool = exposition.pool if exposition is not None else None
    if pool is None:
        return
    for entry in pool.deferred:
        tool_line(entry, pool.counter)


def compile_meta_tool_checks() -> None:
    """Compile (and cache) the argument validators of ``tool_search``, ``tool_inspect``,
    ``tool_invoke`` and ``tool_exec``, the tools a deferring client calls first."""
    from pegboard.core.schema import compile_arguments_check
    from pegboard.deferral.definitions import DEFINITIONS

    for definition in DEFINITIONS.values():
        compile_arguments_check(definition.input_schema)


def rehearse_search(surface: RegistrySurface) -> ToolOutput | None:
    """Run one ``tool_search`` over the deferred pool the way a call runs it
    (:func:`~pegboard.deferral.tool_search.search_pool`), with the first deferred tool's
    summary line as the query; its answer (None: nothing deferred) goes to no client, so
    nothing is audited.

    The build's own search (``"warm up"``) matches few index terms or none, so the first scoring of
    postings (numpy's first fancy-indexed add over the mapped arrays: ~0.8 ms of CPU) and the
    rendering were paid by the first client's search."""
    from pegboard.deferral.tool_search import search_pool

    exposition = surface.exposition
    pool = exposition.pool if exposition is not None else None
    if pool is None or not pool.deferred:
        return None
    first = pool.deferred[0]
    return search_pool(pool, [first.summary or first.name])


def ready_meta_tools(surface: RegistrySurface) -> None:
    """Compute the cached lookups each meta-tool's call reads (its schema key), and lay out a
    ``tools/call`` answer for every protocol version the gateway speaks
    (:func:`~pegboard.gateway.server.call_response`: the first answer of a version ran the SDK's
    serializer over a probe, ~0.1 ms of the loop's CPU), with ``answer``'s plain result."""
    from pegboard.deferral.definitions import DEFINITIONS
    from pegboard.gateway.server import VERSIONS, call_response
    from pegboard.mcp.results import plain_wire

    for name in DEFINITIONS:
        entry = surface.tools.get(name)
        if entry is not None:
            _ = entry.tool.schema_key
    wire = plain_wire(answer) if (answer := rehearse_search(surface)) is not None else None
    if wire is not None:
        for version in VERSIONS:
            call_response(0, version, wire)


# How often the warm-up searches: CPython specialises a function's code after its first
# executions, so the client's first searches ran the ranking unspecialised (session 16: the
# first search's instructions +4% on the search thread, the second's still +2%).
REHEARSALS = 8


def ready_search_calls(surface: RegistrySurface) -> None:
    """What the first calls of a deferring client need, readied after the index build:
    :func:`count_search_lines`, :func:`compile_meta_tool_checks`, :func:`rehearse_search`
    (:data:`REHEARSALS` times) and :func:`ready_meta_tools`."""
    count_search_lines(surface)
    compile_meta_tool_checks()
    for _ in range(REHEARSALS - 1):
        rehearse_search(surface)
    ready_meta_tools(surface)


async def warm_search_index(
    index: SearchIndex,
    answered: anyio.Event,
    offered: Callable[[], bool],
    then: Callable[[], None] | None = None,
) -> None:
    """Build ``index`` in a thread after ``answered`` (or :data:`ANSWER_WAIT_S`), when
    ``offered()`` says a search can come; ``then`` runs in that thread after the build
    (``pegboard serve``: :func:`ready_search_calls`).

    A daemon thread, not awaited: a shutdown never waits for a build (the vector cache is
    written by atomic rename, so one cut short leaves the last good file).
    """
    with anyio.move_on_after(ANSWER_WAIT_S):
        await answered.wait()
    if offered():
        thread = threading.Thread(target=_build, args=(index, then), name="search-index")
        thread.daemon = True
        thread.start()


def _build(index: SearchIndex, then: Callable[[], None] | None) -> None:
    try:
        len(index)  # a LazyRegistryIndex builds on first use
        # One search too: the first query pays lazily built parts (tens of ms at 527 tools).
        index.search(["warm up"], limit=1)
        if then is not None:
            then()
    except Exception as exc:  # the first search builds it, as before
        logger.warning("could not build the search index in the background: %s", exc)

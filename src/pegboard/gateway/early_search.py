"""A first ``tool_search`` answered on the ready path, before the MCP SDK loads.

A client that starts ``pegboard serve`` and searches at once waited for pegboard's whole
start (the SDK, the gateway, the runtime: 1-3 s) although ranking needs only numpy, the search
modules and the stored index (0.15 s of CPU in a fresh process). The full server writes a
``search`` section into the ready snapshot (:mod:`pegboard.gateway.ready`): how to rank as it
does (:meth:`~pegboard.search.stored.StoredIndex.plan`), each deferred tool's line as a hit
shows it, and the protocol versions whose ``tools/call`` answer it writes exactly as
:func:`answer_line` does (checked when the snapshot is written). The early reader answers a
``tool_search`` of a plain query (``query`` a string, ``limit`` optional) from it, and the
full server audits what it answered (:func:`pegboard.gateway.transports.serve_stdio`).

The section is written only when nothing could make the full server answer differently: no
access rules for the stdio principal, an audit log that never refuses calls, deferral on and
the index loaded for the listed catalog. Anything else (another argument, a query that finds
nothing, a version not checked, a failure to load) is left to the full server.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from pegboard.deferral.search_text import Found, grouped_text, rows

DEFAULT_LIMIT = 8  # pegboard.deferral.definitions (not imported: it loads the sandbox)
MAX_LIMIT = 50


def answer_line(request_id: int | str, text: str, found: Sequence[Found]) -> bytes:
    """The ``tools/call`` response line of a search that found ``found`` (rendered ``text``),
    as the full server's :func:`~pegboard.gateway.server.call_response` writes it."""
    result = {
        "content": [{"text": text, "type": "text"}],
        "isError": False,
        "structuredContent": {"tools": rows(found)},
    }
    body = json.dumps(result, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    head = json.dumps(request_id, ensure_ascii=False)
    return f'{{"jsonrpc":"2.0","id":{head},"result":{body}}}\n'.encode()


def plain_query(arguments: Any) -> tuple[str, int] | None:
    """``(query, limit)`` of arguments this path answers; None for any other."""
    if not isinstance(arguments, dict) or not set(arguments) <= {"query", "limit"}:
        return None
    query, limit = arguments.get("query"), arguments.get("limit", DEFAULT_LIMIT)
    if not isinstance(query, str) or not query.strip():
        return None
    if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
        return None
    return query.strip(), limit


class EarlySearch:
    """Answers plain ``tool_search`` calls from a snapshot's ``search`` section."""

    def __init__(self, section: Mapping[str, Any]) -> None:
        self.versions = frozenset(section["versions"])
        self._plan = section["plan"]
        self._lines: dict[str, Found] = {f[0]: (f[0], f[1], f[2], f[3]) for f in section["tools"]}
        self._ranker: Any = None
        self._lock = threading.Lock()

    def answer(self, request_id: int | str, version: str, arguments: Any) -> bytes | None:
        """The response line, or None: the full server answers."""
        asked = plain_query(arguments)
        if asked is None or version not in self.versions:
            return None
        query, limit = asked
        ranker, state = self._loaded()
        from pegboard.search.index import rank

        allowed = frozenset(self._lines)
        hits = rank(state, ranker.signals, ranker.fusion, [query], limit, None, allowed)
        found = [self._lines[h.name] for h in hits if h.score > 0 and h.name in self._lines]
        if not found:
            return None
        return answer_line(request_id, grouped_text(found), found)

    def _loaded(self) -> tuple[Any, Any]:
        with self._lock:
            if self._ranker is None:
                from pegboard.search.threads import one_blas_thread

                one_blas_thread()  # before numpy loads, as serve does
                from pegboard.search.stored import load_plan

                self._ranker = load_plan(self._plan)
            ranker: tuple[Any, Any] = self._ranker
            return ranker

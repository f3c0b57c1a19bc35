"""Resolving a tool name the model sent: the exact match, or the error with suggestions.

Names resolve exactly: a near miss (other case, trailing space, homoglyph, ``server.tool``) is
never mapped onto a tool, it only produces suggestions.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from pegboard.core.entry import ToolEntry
from pegboard.core.registry import RegistrySnapshot
from pegboard.errors import ToolNotAllowed, ToolNotFound

MAX_SUGGESTIONS = 3
MIN_SOURCE_MATCH = 4
_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def resolve_name(
    name: str, found: ToolEntry | None, candidates: Iterable[str], snapshot: RegistrySnapshot
) -> ToolEntry:
    """``found`` (the exact match of ``name`` among ``candidates``), or the error to raise.

    The one resolve of every route: a registered tool that is not a candidate (disabled for
    the profile, or not active in this request) is :class:`ToolNotAllowed`; anything else is
    :class:`ToolNotFound` with :func:`suggest_names` among ``candidates``.
    """
    if found is not None:
        return found
    if name in snapshot:
        raise ToolNotAllowed(name)
    raise ToolNotFound(name, suggest_names(name, candidates, snapshot))


def suggest_names(
    name: str, candidates: Iterable[str], snapshot: RegistrySnapshot | None = None
) -> list[str]:
    """Names close to ``name``: same letters ignoring case and punctuation first, then MCP
    tools whose original name is ``name`` or ends it (``name`` a wire name of another
    server, say), then spelling neighbours. Never ``name`` itself."""
    pool = sorted(set(candidates))
    folded = fold_name(name)
    same = [n for n in pool if folded and fold_name(n) == folded]
    by_source = [
        n
        for n in pool
        if snapshot is not None
        and (entry := snapshot.get(n)) is not None
        and entry.source is not None
        and (tail := fold_name(entry.source.tool_name))
        and (folded == tail or (len(tail) >= MIN_SOURCE_MATCH and folded.endswith(tail)))
    ]
    close = difflib.get_close_matches(name, pool, n=MAX_SUGGESTIONS, cutoff=0.6)
    ordered = list(dict.fromkeys([*same, *by_source, *close]))
    return [n for n in ordered if n != name][:MAX_SUGGESTIONS]


def fold_name(text: str) -> str:
    """``text`` case-folded with everything but letters and digits removed."""
    return _NON_ALNUM.sub("", text.casefold())

"""The default :class:`~pegboard.meta.index.SearchIndex`: BM25F, filters and multi-query merge."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence

from pegboard.core.entry import ToolEntry
from pegboard.meta.index import SearchHit
from pegboard.meta.ranking.document import ToolDocument, document_for
from pegboard.meta.ranking.fusion import rrf, top, top_slots
from pegboard.meta.ranking.lexical import (
    EMPTY_STATE,
    BM25FParams,
    LexicalState,
    updated_state,
)
from pegboard.meta.ranking.text import tokenize

# How deep each query of a multi-query search is ranked before fusion.
_FUSION_DEPTH = 50


class LexicalIndexCore:
    """Holds the current :class:`LexicalState`; writers serialise, readers just load it."""

    def __init__(self, params: BM25FParams | None = None) -> None:
        self.params = params or BM25FParams()
        self._lock = threading.Lock()
        self.state = EMPTY_STATE

    def apply(self, upserts: Iterable[ToolDocument], removals: Iterable[str]) -> None:
        with self._lock:
            self.state = updated_state(self.state, upserts, removals, self.params)


class LexicalIndex:
    """Ranked tool search with BM25F over name, label, description and parameters.

    Safe to search from any thread or task while another updates it: every update publishes a
    new immutable state. Results are deterministic (equal scores are ordered by name).
    """

    def __init__(self, params: BM25FParams | None = None) -> None:
        self._core = LexicalIndexCore(params)

    def upsert(self, entries: Iterable[ToolEntry]) -> None:
        self._core.apply([document_for(e) for e in entries], ())

    def remove(self, names: Iterable[str]) -> None:
        self._core.apply((), list(names))

    def __len__(self) -> int:
        return len(self._core.state.docs)

    def search(
        self,
        queries: Sequence[str],
        *,
        limit: int = 8,
        namespaces: Sequence[str] | None = None,
        allowed: frozenset[str] | None = None,
    ) -> list[SearchHit]:
        state = self._core.state
        keep = _filter(state, namespaces, allowed)
        term_lists = [terms for terms in (tokenize(q) for q in queries) if terms]
        if not term_lists:
            browse = sorted(n for n in state.docs if keep is None or keep(n))
            return [SearchHit(name, 0.0) for name in browse[:limit]]
        if len(term_lists) == 1:
            best = top_slots(state.score(term_lists[0]), state.names, limit, keep)
            return [SearchHit(n, s) for n, s in best]
        rankings = [
            [n for n, _ in top_slots(state.score(terms), state.names, _FUSION_DEPTH, keep)]
            for terms in term_lists
        ]
        return [SearchHit(n, s) for n, s in top(rrf(rankings), limit)]


def _filter(
    state: LexicalState, namespaces: Sequence[str] | None, allowed: frozenset[str] | None
) -> Callable[[str], bool] | None:
    wanted = frozenset(namespaces) if namespaces is not None else None
    if wanted is None and allowed is None:
        return None

    def keep(name: str) -> bool:
        if allowed is not None and name not in allowed:
            return False
        if wanted is None:
            return True
        doc = state.docs[name].doc
        return doc.namespace in wanted or doc.label in wanted

    return keep

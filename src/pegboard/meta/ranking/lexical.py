"""BM25F over tool fields: the default, dependency-free ranker.

Each field (name, namespace label, description, parameter names, parameter descriptions) has a
weight and its own length normalisation; their weighted term frequencies are summed into one
pseudo-frequency and saturated once (BM25F), so a word in the name counts more than the same
word deep in a parameter description, without a long description drowning a precise name.

The index is copy-on-write: every change builds a new immutable :class:`LexicalState` and swaps
one reference, so a reader never sees a half-applied update and needs no lock.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pegboard.meta.ranking.document import FIELDS, ToolDocument
from pegboard.meta.ranking.text import tokenize


@dataclass(frozen=True, slots=True)
class BM25FParams:
    """Field weights and BM25 constants; the defaults were tuned on held-out public data."""

    weights: tuple[float, ...] = (3.0, 1.0, 1.5, 1.0, 0.5)
    b: tuple[float, ...] = (0.3, 0.3, 0.75, 0.5, 0.75)
    k1: float = 1.2
    # Rebuild every posting when a field's average length drifts this much from the one the
    # postings were normalised with (bulk loads); smaller changes update only touched terms.
    renormalise_drift: float = 0.2


@dataclass(frozen=True, slots=True)
class IndexedDoc:
    doc: ToolDocument
    counts: tuple[Mapping[str, int], ...]
    lengths: tuple[int, ...]


def index_doc(doc: ToolDocument) -> IndexedDoc:
    tokens = [tokenize(doc.fields[f]) for f in FIELDS]
    return IndexedDoc(doc, tuple(Counter(t) for t in tokens), tuple(len(t) for t in tokens))


@dataclass(frozen=True, slots=True)
class LexicalState:
    """One immutable version of the index."""

    docs: Mapping[str, IndexedDoc]
    postings: Mapping[str, Mapping[str, float]]  # term -> name -> saturated pseudo-tf
    totals: tuple[int, ...]  # summed field lengths
    norm_avg: tuple[float, ...]  # average field lengths the postings were computed with

    def idf(self, term: str) -> float:
        df = len(self.postings.get(term, ()))
        n = len(self.docs)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5)) if df else 0.0

    def score(self, terms: Iterable[str]) -> dict[str, float]:
        """BM25F score of every doc sharing a term with the query (terms may repeat)."""
        scores: dict[str, float] = {}
        get = scores.get
        for term, qtf in sorted(Counter(terms).items()):
            posting = self.postings.get(term)
            if not posting:
                continue
            weight = self.idf(term) * qtf
            for name, sat in posting.items():
                scores[name] = get(name, 0.0) + weight * sat
        return scores


EMPTY_STATE = LexicalState(MappingProxyType({}), MappingProxyType({}), (0,) * len(FIELDS), ())


def _averages(totals: tuple[int, ...], n: int) -> tuple[float, ...]:
    return tuple(max(t / n, 1.0) for t in totals) if n else (1.0,) * len(totals)


def _doc_weights(doc: IndexedDoc, avg: tuple[float, ...], p: BM25FParams) -> dict[str, float]:
    pseudo: dict[str, float] = {}
    for i, counts in enumerate(doc.counts):
        if not counts:
            continue
        norm = p.weights[i] / (1.0 - p.b[i] + p.b[i] * doc.lengths[i] / avg[i])
        for term, tf in counts.items():
            pseudo[term] = pseudo.get(term, 0.0) + tf * norm
    return {t: tf * (p.k1 + 1.0) / (p.k1 + tf) for t, tf in pseudo.items()}


def _drifted(old: tuple[float, ...], new: tuple[float, ...], limit: float) -> bool:
    return not old or any(abs(n - o) > limit * o for o, n in zip(old, new, strict=True))


def updated_state(
    state: LexicalState,
    upserts: Iterable[ToolDocument],
    removals: Iterable[str],
    params: BM25FParams,
) -> LexicalState:
    """A new state with ``upserts`` added or replaced and ``removals`` dropped."""
    docs = dict(state.docs)
    totals = list(state.totals)
    touched_out: list[IndexedDoc] = []
    added: list[IndexedDoc] = []
    for name in removals:
        old = docs.pop(name, None)
        if old is not None:
            touched_out.append(old)
    for document in upserts:
        new = index_doc(document)
        old = docs.get(document.name)
        if old is not None:
            touched_out.append(old)
        docs[document.name] = new
        added.append(new)
    for old in touched_out:
        totals = [t - n for t, n in zip(totals, old.lengths, strict=True)]
    for new in added:
        totals = [t + n for t, n in zip(totals, new.lengths, strict=True)]
    avg = _averages(tuple(totals), len(docs))
    if _drifted(state.norm_avg, avg, params.renormalise_drift):
        return _rebuild(docs, tuple(totals), avg, params)
    postings = dict(state.postings)
    copied: set[str] = set()

    def writable(term: str) -> dict[str, float]:
        if term not in copied:
            copied.add(term)
            postings[term] = dict(postings.get(term, {}))
        return postings[term]  # type: ignore[return-value]

    for old in touched_out:
        for term in {t for counts in old.counts for t in counts}:
            posting = writable(term)
            posting.pop(old.doc.name, None)
            if not posting:
                del postings[term]
                copied.discard(term)
    for new in added:
        for term, weight in _doc_weights(new, state.norm_avg, params).items():
            writable(term)[new.doc.name] = weight
    return LexicalState(
        MappingProxyType(docs), MappingProxyType(postings), tuple(totals), state.norm_avg
    )


def _rebuild(
    docs: dict[str, IndexedDoc], totals: tuple[int, ...], avg: tuple[float, ...], p: BM25FParams
) -> LexicalState:
    postings: dict[str, dict[str, float]] = {}
    for name in sorted(docs):
        for term, weight in _doc_weights(docs[name], avg, p).items():
            postings.setdefault(term, {})[name] = weight
    return LexicalState(MappingProxyType(docs), MappingProxyType(postings), totals, avg)


class LexicalIndexCore:
    """Holds the current :class:`LexicalState`; writers serialise, readers just load it."""

    def __init__(self, params: BM25FParams | None = None) -> None:
        self.params = params or BM25FParams()
        self._lock = threading.Lock()
        self.state = EMPTY_STATE

    def apply(self, upserts: Iterable[ToolDocument], removals: Iterable[str]) -> None:
        with self._lock:
            self.state = updated_state(self.state, upserts, removals, self.params)

"""BM25F over tool fields: the default, dependency-light ranker.

Each field (name, namespace label, description, parameter names, parameter descriptions) has a
weight and its own length normalisation; the weighted term frequencies are summed into one
pseudo-frequency and saturated once (BM25F), so a word in the name counts more than the same
word deep in a parameter description, without a long description drowning a precise name.

Documents live in numbered slots and every term's posting list is a pair of numpy arrays, so a
query costs one vectorised add per query term. The index is copy-on-write: every change builds
a new immutable :class:`LexicalState` and swaps one reference, so a reader never sees a
half-applied update and needs no lock. Inverse document frequencies are computed at query time
and field-length normalisation is redone only when average lengths drift, which keeps single
upserts cheap.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from pegboard.search.document import FIELDS, ToolDocument
from pegboard.search.text import tokenize

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]
    IntArray = npt.NDArray[np.int64]
else:  # numpy loads on first use: a small stored index is ranked without it (search.flat)
    from pegboard._lazy import LazyModule

    np = LazyModule("numpy")


@dataclass(frozen=True, slots=True)
class BM25FParams:
    """Field weights (in :data:`FIELDS` order) and BM25 constants."""

    weights: tuple[float, ...] = (3.0, 1.0, 1.5, 1.0, 0.5)
    b: tuple[float, ...] = (0.3, 0.3, 0.75, 0.5, 0.75)
    k1: float = 1.2
    # Renormalise every posting when a field's average length drifts this much from the one the
    # postings were computed with (bulk loads); smaller changes touch only the changed docs.
    renormalise_drift: float = 0.2


@dataclass(frozen=True, slots=True)
class IndexedDoc:
    doc: ToolDocument
    counts: tuple[Mapping[str, int], ...]
    lengths: tuple[int, ...]

    @property
    def terms(self) -> set[str]:
        return {t for counts in self.counts for t in counts}


def index_doc(doc: ToolDocument) -> IndexedDoc:
    tokens = [tokenize(doc.fields[f]) for f in FIELDS]
    return IndexedDoc(doc, tuple(Counter(t) for t in tokens), tuple(len(t) for t in tokens))


@dataclass(frozen=True, slots=True)
class Posting:
    slots: IntArray
    weights: FloatArray  # saturated BM25F pseudo-frequency, idf not applied


@dataclass(frozen=True, slots=True)
class LexicalState:
    """One immutable version of the index; slot ``i`` holds ``names[i]`` (None when free)."""

    names: tuple[str | None, ...]
    slots: Mapping[str, int]
    docs: Mapping[str, IndexedDoc]
    postings: Mapping[str, Posting]
    totals: tuple[int, ...]
    norm_avg: tuple[float, ...]

    @property
    def size(self) -> int:
        """How many documents are indexed (free slots not counted)."""
        return len(self.docs)

    def live(self) -> Iterable[str]:
        """The names of the indexed documents."""
        return self.docs.keys()

    def place(self, name: str) -> tuple[str, str]:
        """The namespace and label of an indexed document."""
        doc = self.docs[name].doc
        return doc.namespace, doc.label

    def idf(self, term: str) -> float:
        posting = self.postings.get(term)
        if posting is None:
            return 0.0
        df, n = len(posting.slots), len(self.docs)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def score(self, terms: Iterable[str]) -> FloatArray:
        """BM25F score per slot (0 where no query term matches).

        A repeated query word counts once: in long task descriptions repetition says little
        about which tool is wanted, and counting it lets one tool crowd out the others.
        """
        scores = np.zeros(len(self.names))
        for term in sorted(set(terms)):
            posting = self.postings.get(term)
            if posting is not None:
                scores[posting.slots] += self.idf(term) * posting.weights
        return scores


EMPTY_STATE = LexicalState(
    (), MappingProxyType({}), MappingProxyType({}), MappingProxyType({}), (0,) * len(FIELDS), ()
)


def _averages(totals: Iterable[int], n: int) -> tuple[float, ...]:
    return tuple(max(t / n, 1.0) if n else 1.0 for t in totals)


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
    upserts: Iterable[ToolDocument | IndexedDoc],
    removals: Iterable[str],
    params: BM25FParams,
) -> LexicalState:
    """A new state with ``upserts`` added or replaced and ``removals`` dropped.

    Upserts may come tokenised already (:class:`IndexedDoc`) or as raw documents.
    """
    names = list(state.names)
    slots = dict(state.slots)
    docs = dict(state.docs)
    totals = list(state.totals)
    gone: dict[int, IndexedDoc] = {}  # slot -> the doc that left it
    added: dict[int, IndexedDoc] = {}
    for name in removals:
        if name in docs:
            slot = slots.pop(name)
            gone.setdefault(slot, docs.pop(name))
            added.pop(slot, None)
            names[slot] = None
    free = [i for i, n in enumerate(names) if n is None]
    free.reverse()
    for item in upserts:
        new = item if isinstance(item, IndexedDoc) else index_doc(item)
        document = new.doc
        existing = slots.get(document.name)
        if existing is None:
            slot = free.pop() if free else len(names)
            if slot == len(names):
                names.append(None)
            names[slot] = document.name
            slots[document.name] = slot
        else:
            slot = existing
            if slot not in gone and slot not in added:
                gone[slot] = docs[document.name]
        docs[document.name] = added[slot] = new
    for old in gone.values():
        totals = [t - n for t, n in zip(totals, old.lengths, strict=True)]
    for new in added.values():
        totals = [t + n for t, n in zip(totals, new.lengths, strict=True)]
    avg = _averages(totals, len(docs))
    if _drifted(state.norm_avg, avg, params.renormalise_drift):
        return _rebuild(tuple(names), slots, docs, tuple(totals), avg, params)
    postings = dict(state.postings)
    touched = {t for old in gone.values() for t in old.terms}
    fresh: dict[str, list[tuple[int, float]]] = {}
    for slot, new in added.items():
        for term, weight in _doc_weights(new, state.norm_avg, params).items():
            fresh.setdefault(term, []).append((slot, weight))
    changed_slots = np.array(sorted(gone.keys() | added.keys()), dtype=np.int64)
    for term in touched | fresh.keys():
        old_posting = postings.get(term)
        keep_slots = np.empty(0, dtype=np.int64)
        keep_weights = np.empty(0)
        if old_posting is not None:
            mask = ~np.isin(old_posting.slots, changed_slots)
            keep_slots, keep_weights = old_posting.slots[mask], old_posting.weights[mask]
        extra = fresh.get(term, [])
        merged_slots = np.concatenate([keep_slots, np.array([s for s, _ in extra], np.int64)])
        merged_weights = np.concatenate([keep_weights, np.array([w for _, w in extra])])
        if merged_slots.size:
            postings[term] = Posting(merged_slots, merged_weights)
        else:
            postings.pop(term, None)
    return LexicalState(
        tuple(names),
        MappingProxyType(slots),
        MappingProxyType(docs),
        MappingProxyType(postings),
        tuple(totals),
        state.norm_avg,
    )


def _rebuild(
    names: tuple[str | None, ...],
    slots: dict[str, int],
    docs: dict[str, IndexedDoc],
    totals: tuple[int, ...],
    avg: tuple[float, ...],
    p: BM25FParams,
) -> LexicalState:
    # One flat (term id, slot, weight) triple list, grouped by a single stable sort: far fewer
    # small allocations than growing one list pair per term.
    term_ids: dict[str, int] = {}
    ids: list[int] = []
    slot_list: list[int] = []
    weights: list[float] = []
    for slot, name in enumerate(names):
        if name is None:
            continue
        for term, weight in _doc_weights(docs[name], avg, p).items():
            ids.append(term_ids.setdefault(term, len(term_ids)))
            slot_list.append(slot)
            weights.append(weight)
    order = np.argsort(np.array(ids, dtype=np.int64), kind="stable")
    sorted_slots = np.array(slot_list, dtype=np.int64)[order]
    sorted_weights = np.array(weights)[order]
    bounds = np.cumsum(np.bincount(np.array(ids, dtype=np.int64), minlength=len(term_ids)))
    starts = [0, *bounds[:-1].tolist()]
    ends = bounds.tolist()
    postings = {
        term: Posting(sorted_slots[starts[i] : ends[i]], sorted_weights[starts[i] : ends[i]])
        for term, i in term_ids.items()
    }
    return LexicalState(
        names,
        MappingProxyType(slots),
        MappingProxyType(docs),
        MappingProxyType(postings),
        totals,
        avg,
    )

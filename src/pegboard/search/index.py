"""The default :class:`~pegboard.search.interface.SearchIndex`: BM25F, dense fusion, filters.

Every update publishes a new immutable :class:`IndexState` (lexical postings plus, with an
embedder, one unit vector per slot); searches read whichever state is current, without locks.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from pegboard.core.entry import ToolEntry
from pegboard.search.dense import Embedder, dictionary
from pegboard.search.document import ToolDocument, document_for
from pegboard.search.fusion import interleave, top_slots
from pegboard.search.interface import SearchHit
from pegboard.search.lexical import (
    EMPTY_STATE,
    BM25FParams,
    LexicalState,
    updated_state,
)
from pegboard.search.namespaces import space_slots, updated_spaces
from pegboard.search.pages import release as release_pages
from pegboard.search.text import term_of, tokenize

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pegboard.search.dense import Vectors
    from pegboard.search.lexical import FloatArray, IntArray
else:  # numpy loads on first use: a small stored index is ranked without it (search.flat)
    from pegboard._lazy import LazyModule

    np = LazyModule("numpy")


@dataclass(frozen=True, slots=True)
class FusionParams:
    """How the lexical signals combine; BM25F scores are first scaled to [0, 1] by their maximum.

    ``score = bm25f * (1 + namespace_weight * namespace_bm25f) + sum(weight_i * z+(cosine_i))``
    over the dense signals: a tool's own words decide whether it matches, its namespace's words
    reorder the matches, each embedding model adds its view of meaning. ``z+`` is the cosine's
    z-score over the catalog for this query, negatives cut to 0: raw cosines of static
    embeddings sit in a narrow, query-dependent band, so standardising them makes one weight
    mean the same for every query and every model (measured on the eval sets: it beat raw
    cosine, max-scaled cosine and reciprocal-rank fusion at every weight tried).
    """

    namespace_weight: float = 0.5


@dataclass(frozen=True, slots=True)
class DenseSignal:
    """One embedding model and the weight of its standardised cosine in the fused score."""

    embedder: Embedder
    weight: float


@dataclass(frozen=True, slots=True)
class IndexState:
    lexical: LexicalState
    spaces: LexicalState  # one summary document per namespace
    space_of: IntArray  # tool slot -> namespace slot (-1 when the slot is free)
    vectors: tuple[Vectors, ...]  # per dense signal: row i belongs to slot i, 0 when free

    @property
    def flat(self) -> bool:
        """Whether ranking scores in plain Python (:mod:`pegboard.search.flat`): never for an
        index in memory, whose arrays are numpy's."""
        return False


EMPTY_INDEX = IndexState(EMPTY_STATE, EMPTY_STATE, cast("IntArray", ()), ())


class LexicalView(Protocol):
    """What ranking reads of a lexical state: the live :class:`LexicalState` or one loaded
    from disk (:mod:`pegboard.search.stored`)."""

    @property
    def names(self) -> Sequence[str | None]: ...

    @property
    def size(self) -> int: ...

    def live(self) -> Iterable[str]: ...

    def place(self, name: str) -> tuple[str, str]: ...

    def idf(self, term: str) -> float: ...

    def score(self, terms: Iterable[str]) -> FloatArray | list[float]: ...


class RankedState(Protocol):
    """What ranking reads of an index state (:class:`IndexState` or a stored one)."""

    @property
    def lexical(self) -> LexicalView: ...

    @property
    def spaces(self) -> LexicalView: ...

    @property
    def space_of(self) -> IntArray | Sequence[int]: ...

    @property
    def vectors(self) -> Sequence[Vectors]: ...

    @property
    def flat(self) -> bool: ...


class ToolIndex:
    """Ranked tool search over name, label, description and parameters.

    With ``dense`` signals the BM25F scores are fused with the cosine similarity of each
    model's embeddings. Safe to search from any thread or task while another updates it.
    Results are deterministic: equal scores are ordered by name.
    """

    def __init__(
        self,
        params: BM25FParams | None = None,
        *,
        dense: Sequence[DenseSignal] = (),
        fusion: FusionParams | None = None,
    ) -> None:
        self.params = params or BM25FParams()
        self.fusion = fusion or FusionParams()
        self.signals = tuple(dense)
        self._lock = threading.Lock()
        self._state = EMPTY_INDEX

    @property
    def state(self) -> IndexState:
        return self._state

    @property
    def dense(self) -> bool:
        """Whether any embedding signal is fused into the scores."""
        return bool(self.signals)

    def upsert(self, entries: Iterable[ToolEntry]) -> None:
        self._apply([document_for(e) for e in entries], ())

    def upsert_documents(self, documents: Sequence[ToolDocument]) -> None:
        """:meth:`upsert` of entries already turned into documents."""
        self._apply(documents, ())

    def remove(self, names: Iterable[str]) -> None:
        self._apply((), list(names))

    def __len__(self) -> int:
        return self._state.lexical.size

    def _apply(self, upserts: Sequence[ToolDocument], removals: Sequence[str]) -> None:
        with self._lock:
            old = self._state
            lexical = updated_state(old.lexical, upserts, removals, self.params)
            changed = {d.namespace for d in upserts}
            for name in [*removals, *(d.name for d in upserts)]:
                gone = old.lexical.docs.get(name)
                if gone is not None:
                    changed.add(gone.doc.namespace)
            spaces = updated_spaces(old.spaces, lexical.docs, changed)
            space_of = space_slots(lexical.names, lexical.docs, spaces)
            previous: Sequence[Vectors | None] = old.vectors or [None] * len(self.signals)
            vectors = tuple(
                _vectors(signal.embedder, rows, old.lexical, lexical, upserts)
                for signal, rows in zip(self.signals, previous, strict=True)
            )
            self._state = IndexState(lexical, spaces, space_of, vectors)

    def search(
        self,
        queries: Sequence[str],
        *,
        limit: int = 8,
        namespaces: Sequence[str] | None = None,
        allowed: frozenset[str] | None = None,
    ) -> list[SearchHit]:
        return rank(self._state, self.signals, self.fusion, queries, limit, namespaces, allowed)


def rank(
    state: RankedState,
    signals: Sequence[DenseSignal],
    fusion: FusionParams,
    queries: Sequence[str],
    limit: int,
    namespaces: Sequence[str] | None,
    allowed: frozenset[str] | None,
) -> list[SearchHit]:
    """:meth:`SearchIndex.search` over ``state`` with the ranker's ``signals`` and ``fusion``.

    The mapped pages scoring read are unmapped from the process after it
    (:mod:`pegboard.search.pages`).
    """
    names = state.lexical.names
    keep = _filter(state.lexical, namespaces, allowed)
    texts = [q for q in queries if q.strip()]
    scorer: Callable[..., Any] = _scores
    top: Callable[..., list[tuple[str, float]]] = top_slots
    if state.flat:  # a small stored index: no numpy (pegboard.search.flat)
        from pegboard.search import flat

        scorer, top = flat.scores, flat.top_slots
    try:
        scored = [s for s in (scorer(state, signals, fusion, q) for q in texts) if s is not None]
    finally:
        release_pages()
    if not scored:
        browse = sorted(n for n in state.lexical.live() if keep is None or keep(n))
        return [SearchHit(name, 0.0) for name in browse[:limit]]
    if len(scored) == 1:
        return [SearchHit(n, s) for n, s in top(scored[0], names, limit, keep)]
    rankings = [[n for n, _ in top(s, names, limit, keep)] for s in scored]
    return [SearchHit(n, s) for n, s in interleave(rankings, limit)]


def _scores(
    state: RankedState, signals: Sequence[DenseSignal], fusion: FusionParams, query: str
) -> FloatArray | None:
    terms = tokenize(query)
    total = np.zeros(len(state.lexical.names))
    space_of = np.asarray(state.space_of, dtype=np.int64)  # a stored index's is a memoryview
    if terms:
        total += _unit_max(np.asarray(state.lexical.score(terms), dtype=np.float64))
        if fusion.namespace_weight and len(space_of):
            spaces = _unit_max(np.asarray(state.spaces.score(terms), dtype=np.float64))
            per_tool = np.append(spaces, 0.0)[space_of]
            total *= 1.0 + fusion.namespace_weight * per_tool
    dense = False
    if signals and len(space_of):
        weight, live = idf_weight(state.lexical), space_of >= 0
        for signal, vectors in zip(signals, state.vectors, strict=True):
            query_vector = signal.embedder.embed_query(query, weight)
            if query_vector.any():
                dense = True
                cosine = (vectors @ query_vector).astype(np.float64)
                total += signal.weight * _positive_z(cosine, live)
    # A query with no index term and no word a model knows (only stopwords, or noise such
    # as "xyzzy") counts as absent: tool_search then says that nothing matches.
    return total if terms or dense else None


def _vectors(
    embedder: Embedder,
    old_rows: Vectors | None,
    old: LexicalState,
    lexical: LexicalState,
    upserts: Sequence[ToolDocument],
) -> Vectors:
    """One model's vectors for the new slot layout: kept rows copied, upserts embedded."""
    rows = np.zeros((len(lexical.names), embedder.dims), dtype=np.float32)
    if old_rows is not None:
        kept = min(len(old_rows), len(rows))
        rows[:kept] = old_rows[:kept]
        for slot, name in enumerate(lexical.names):
            if name is None or old.slots.get(name) != slot:
                rows[slot] = 0.0
    if upserts:
        fresh = embedder.embed([doc.text for doc in upserts])
        for doc, row in zip(upserts, fresh, strict=True):
            rows[lexical.slots[doc.name]] = row
    return rows


def idf_weight(lexical: LexicalView) -> Callable[[str], float]:
    """A query word's weight in the dense query vectors: its IDF in this catalog.

    Stopwords weigh nothing; a word the catalog lacks gets the rarest word's IDF when it is a
    dictionary word, and nothing when it is not (a typo, an id, keyboard noise).
    """
    n = lexical.size
    rarest = math.log(1.0 + (n + 0.5) / 0.5)
    known = dictionary()

    def weight(word: str) -> float:
        term = term_of(word) if word.isascii() else word
        if term is None:
            return 0.0
        return lexical.idf(term) or (rarest if word in known else 0.0)

    return weight


def _positive_z(values: FloatArray, live: npt.NDArray[np.bool_]) -> FloatArray:
    """How many standard deviations above the mean of the live slots, at least 0."""
    sample = values[live]
    spread = float(sample.std()) if len(sample) else 0.0
    if spread <= 0.0:
        return np.zeros(len(values))
    z: FloatArray = np.maximum((values - float(sample.mean())) / spread, 0.0) * live
    return z


def _unit_max(scores: FloatArray) -> FloatArray:
    peak = scores.max() if len(scores) else 0.0
    scaled: FloatArray = scores / peak if peak > 0 else scores
    return scaled


class LexicalIndex(ToolIndex):
    """The lexical ranker: BM25F with namespace summaries, no embedding model."""

    def __init__(self, params: BM25FParams | None = None) -> None:
        super().__init__(params)


def _filter(
    state: LexicalView, namespaces: Sequence[str] | None, allowed: frozenset[str] | None
) -> Callable[[str], bool] | None:
    wanted = frozenset(namespaces) if namespaces is not None else None
    if wanted is None and allowed is None:
        return None

    def keep(name: str) -> bool:
        if allowed is not None and name not in allowed:
            return False
        if wanted is None:
            return True
        namespace, label = state.place(name)
        return namespace in wanted or label in wanted

    return keep

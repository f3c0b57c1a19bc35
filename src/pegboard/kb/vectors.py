"""The vector side of a search: the base's chunk vectors as one matrix, scored by brute force.

The float32 matrix is read from the store once per base and generation and kept in memory.
sqlite-vec cannot load here (this Python's sqlite3 has no extension loading), and at 100,000
chunks of 256 dimensions a numpy matrix-vector product is tens of milliseconds (bench/RESULTS.md).
The query vector weighs each word by its IDF over the store's FTS5 vocabulary.

Each document's lead (its first chunk: a page's opening paragraph says what the whole page is
about) is also scored against the query, over the leads of every document searched, so a page
whose subject is the question can outrank a large page that mentions it in passing. So is
its title alone (embedded at ingestion; stores from before have none, and score as before).
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from pegboard.kb.embedding import load_embedder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pegboard.search.dense import WordWeight

CANDIDATES = 100  # best chunks by each signal handed to fusion


@dataclass(frozen=True, slots=True)
class _Matrix:
    """One base's chunk vectors, and which rows are its documents' leads."""

    generation: int
    ids: npt.NDArray[np.int64]
    vectors: npt.NDArray[np.float32]
    lead_documents: npt.NDArray[np.int64]  # document ids, one per lead row
    lead_rows: npt.NDArray[np.int64]  # the row of each document's first chunk
    title_documents: npt.NDArray[np.int64]  # document ids, one per title row
    titles: npt.NDArray[np.float32]  # each document's title vector


@dataclass(frozen=True, slots=True)
class Dense:
    """The vector side of a search: the best chunks by cosine, each as (chunk id, z-score of
    its cosine over every chunk searched), each document's lead z-score (document id -> z of
    its first chunk's cosine over every lead searched, negatives as 0) and its title's (over
    every title searched, negatives as 0)."""

    chunks: list[tuple[int, float]] = field(default_factory=list)
    leads: dict[int, float] = field(default_factory=dict)
    titles: dict[int, float] = field(default_factory=dict)


_matrices: dict[tuple[str, str], _Matrix] = {}
_lock = threading.Lock()


def dense_ranking(
    conn: sqlite3.Connection,
    db_path: Path,
    generations: Mapping[str, int],
    model: str,
    query: str,
) -> Dense:
    """The best ``CANDIDATES`` chunks of the bases ``generations`` names (all built with
    ``model``) by cosine, and every document's lead score (:class:`Dense`)."""
    import numpy as np

    parts = [_matrix(conn, db_path, base, gen) for base, gen in sorted(generations.items())]
    parts = [part for part in parts if len(part.ids)]
    if not parts:
        return Dense()
    vector = load_embedder(model).embed_query(query, _idf_weight(conn, db_path))
    if not np.any(vector):
        return Dense()
    ids = np.concatenate([p.ids for p in parts])
    cosines = [p.vectors @ vector for p in parts]
    cosine = np.concatenate(cosines)
    top = min(CANDIDATES, len(ids))
    best = np.argpartition(-cosine, top - 1)[:top]
    best = best[np.argsort(-cosine[best], kind="stable")]
    z = _standardised(cosine)
    chunks = [(int(ids[i]), max(float(z[i]), 0.0)) for i in best]
    lead_cosines = [c[p.lead_rows] for c, p in zip(cosines, parts, strict=True)]
    lead_z = _standardised(np.concatenate(lead_cosines))
    documents = np.concatenate([p.lead_documents for p in parts])
    leads = {int(d): float(v) for d, v in zip(documents, lead_z, strict=True) if v > 0}
    titled = [p for p in parts if len(p.title_documents)]
    titles: dict[int, float] = {}
    if titled:
        title_z = _standardised(np.concatenate([p.titles @ vector for p in titled]))
        owners = np.concatenate([p.title_documents for p in titled])
        titles = {int(d): float(v) for d, v in zip(owners, title_z, strict=True) if v > 0}
    return Dense(chunks, leads, titles)


def _standardised(values: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """z-scores of ``values`` (all 0 when there is one value, or all are alike)."""
    import numpy as np

    mean, spread = float(values.mean()), float(values.std())
    if not spread > 0:
        return np.zeros(len(values))
    out: npt.NDArray[np.float64] = (values.astype(np.float64) - mean) / spread
    return out


def _matrix(conn: sqlite3.Connection, db_path: Path, base: str, generation: int) -> _Matrix:
    import numpy as np

    key = (str(db_path.resolve()), base)
    with _lock:
        cached = _matrices.get(key)
    if cached is not None and cached.generation == generation:
        return cached
    rows = conn.execute(
        "SELECT id, document, position, vector FROM chunks WHERE base = ? ORDER BY id", (base,)
    )
    ids_list: list[int] = []
    blobs: list[bytes] = []
    lead: dict[int, tuple[int, int]] = {}  # document -> (position, row) of its first chunk
    for row, (chunk_id, document, position, blob) in enumerate(rows):
        ids_list.append(chunk_id)
        blobs.append(blob)
        if document not in lead or position < lead[document][0]:
            lead[document] = (position, row)
    ids = np.asarray(ids_list, dtype=np.int64)
    title_rows = _titles(conn, base)
    built = _Matrix(
        generation,
        ids,
        _rows(blobs),
        np.asarray(list(lead), dtype=np.int64),
        np.asarray([r for _, r in lead.values()], dtype=np.int64),
        np.asarray([d for d, _ in title_rows], dtype=np.int64),
        _rows([b for _, b in title_rows]),
    )
    with _lock:
        _matrices[key] = built
    return built


def _rows(blobs: list[bytes]) -> npt.NDArray[np.float32]:
    import numpy as np

    flat = np.frombuffer(b"".join(blobs), dtype=np.float32)
    return flat.reshape(len(blobs), -1) if blobs else flat.reshape(0, 0)


def _titles(conn: sqlite3.Connection, base: str) -> list[tuple[int, bytes]]:
    """(document id, title vector) of ``base``'s documents ([] in a store from before titles
    were embedded)."""
    if not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'document_titles'"
    ).fetchone():
        return []
    rows = conn.execute(
        "SELECT t.document, t.vector FROM document_titles t JOIN documents d"
        " ON d.id = t.document WHERE d.base = ? ORDER BY t.document",
        (base,),
    )
    return [(int(d), bytes(v)) for d, v in rows]


def _idf_weight(conn: sqlite3.Connection, db_path: Path) -> WordWeight:
    """A query word's weight in the query vector: its IDF over the store's chunks.

    Stopwords weigh nothing; a dictionary word no chunk uses gets the rarest word's IDF (the
    words a user's question does not share with the notes are the point of a dense signal).
    """
    from pegboard.search.dense import dictionary
    from pegboard.search.text import STOPWORDS

    total = _chunk_count(conn, db_path)
    rarest = math.log(1.0 + (total + 0.5) / 0.5)
    known = dictionary()

    def weight(word: str) -> float:
        lowered = word.lower()
        if lowered in STOPWORDS:
            return 0.0
        row = conn.execute(
            "SELECT doc FROM chunks_vocab WHERE term = ?", (_porter(lowered),)
        ).fetchone()
        if row is None:
            return rarest if lowered in known else 0.0
        df = int(row[0])
        return math.log(1.0 + (total - df + 0.5) / (df + 0.5))

    return weight


_counts: dict[tuple[object, ...], int] = {}  # small: one entry per store state searched


def _chunk_count(conn: sqlite3.Connection, db_path: Path) -> int:
    """The store's chunk count, cached per store and set of base generations (a count scans
    the table)."""
    bases = conn.execute("SELECT name, generation FROM bases ORDER BY name").fetchall()
    key = (str(db_path.resolve()), *bases)
    with _lock:
        count = _counts.get(key)
    if count is None:
        count = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
        with _lock:
            _counts[key] = count
    return count


@cache
def _stemmer() -> object:
    import Stemmer

    return Stemmer.Stemmer("porter")


def _porter(word: str) -> str:
    return str(_stemmer().stemWord(word))  # type: ignore[attr-defined]

"""The vector side of a search: the base's chunk vectors as one matrix, scored by brute force.

The float32 matrix is read from the store once per base and generation and kept in memory.
sqlite-vec cannot load here (this Python's sqlite3 has no extension loading), and at 100,000
chunks of 256 dimensions a numpy matrix-vector product is tens of milliseconds (bench/RESULTS.md).
The query vector weighs each word by its IDF over the store's FTS5 vocabulary.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from pegboard.kb.embedding import load_embedder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pegboard.search.dense import WordWeight

CANDIDATES = 50  # best chunks by cosine handed to fusion
_matrices: dict[tuple[str, str], tuple[int, npt.NDArray[np.int64], npt.NDArray[np.float32]]] = {}
_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class DenseRanking:
    """The best candidates by cosine, and the mean and spread of the cosine over the base."""

    ranked: list[tuple[int, float]]  # (chunk id, cosine), best first
    mean: float
    spread: float


def dense_ranking(
    conn: sqlite3.Connection, db_path: Path, base: str, generation: int, model: str, query: str
) -> DenseRanking:
    import numpy as np

    ids, matrix = _matrix(conn, db_path, base, generation)
    if not len(ids):
        return DenseRanking([], 0.0, 0.0)
    vector = load_embedder(model).embed_query(query, _idf_weight(conn, db_path))
    if not np.any(vector):
        return DenseRanking([], 0.0, 0.0)
    cosine = matrix @ vector
    top = min(CANDIDATES, len(ids))
    best = np.argpartition(-cosine, top - 1)[:top]
    best = best[np.argsort(-cosine[best], kind="stable")]
    ranked = [(int(ids[i]), float(cosine[i])) for i in best]
    return DenseRanking(ranked, float(cosine.mean()), float(cosine.std()))


def _matrix(
    conn: sqlite3.Connection, db_path: Path, base: str, generation: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    import numpy as np

    key = (str(db_path.resolve()), base)
    with _lock:
        cached = _matrices.get(key)
    if cached is not None and cached[0] == generation:
        return cached[1], cached[2]
    rows = conn.execute("SELECT id, vector FROM chunks WHERE base = ? ORDER BY id", (base,))
    ids_list: list[int] = []
    blobs: list[bytes] = []
    for chunk_id, blob in rows:
        ids_list.append(chunk_id)
        blobs.append(blob)
    ids = np.asarray(ids_list, dtype=np.int64)
    flat = np.frombuffer(b"".join(blobs), dtype=np.float32)
    matrix = flat.reshape(len(ids_list), -1) if ids_list else flat.reshape(0, 0)
    with _lock:
        _matrices[key] = (generation, ids, matrix)
    return ids, matrix


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

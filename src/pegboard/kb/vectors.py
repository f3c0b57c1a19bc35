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
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from pegboard.kb.embedding import load_embedder

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pegboard.search.dense import WordWeight

CANDIDATES = 100  # best chunks by each signal handed to fusion
_matrices: dict[tuple[str, str], tuple[int, npt.NDArray[np.int64], npt.NDArray[np.float32]]] = {}
_lock = threading.Lock()


def dense_ranking(
    conn: sqlite3.Connection,
    db_path: Path,
    generations: Mapping[str, int],
    model: str,
    query: str,
) -> list[tuple[int, float]]:
    """The best ``CANDIDATES`` chunks of the bases ``generations`` names (all built with
    ``model``) by cosine, each as (chunk id, z-score of its cosine over all their chunks)."""
    import numpy as np

    parts = [_matrix(conn, db_path, base, gen) for base, gen in sorted(generations.items())]
    parts = [(ids, matrix) for ids, matrix in parts if len(ids)]
    if not parts:
        return []
    vector = load_embedder(model).embed_query(query, _idf_weight(conn, db_path))
    if not np.any(vector):
        return []
    ids = parts[0][0] if len(parts) == 1 else np.concatenate([p[0] for p in parts])
    cosine = (
        parts[0][1] @ vector
        if len(parts) == 1
        else np.concatenate([matrix @ vector for _, matrix in parts])
    )
    mean, spread = float(cosine.mean()), float(cosine.std())
    spread = spread if spread > 0 else float("inf")  # one chunk, or all alike: no z-score
    top = min(CANDIDATES, len(ids))
    best = np.argpartition(-cosine, top - 1)[:top]
    best = best[np.argsort(-cosine[best], kind="stable")]
    return [(int(ids[i]), max((float(cosine[i]) - mean) / spread, 0.0)) for i in best]


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

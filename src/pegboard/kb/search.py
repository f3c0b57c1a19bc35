"""Searching one base: FTS5 BM25 and cosine over the chunk vectors, fused into one ranking.

Vectors are scored in :mod:`pegboard.kb.vectors`. Fusion is standardised-score fusion, as in
tool_search: BM25 scaled to [0, 1] by the best match plus the cosine's z-score over the base.
On bench/kb.py's paraphrase set it found the right note first for 31 of 40 questions with
either embedder, reciprocal-rank fusion (``"rrf"``) for 25-27, vectors alone for 28-29 and
FTS5 alone for 19.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pegboard.kb.store import base_model
from pegboard.kb.vectors import CANDIDATES, DenseRanking, dense_ranking

Mode = Literal["fused", "fts", "vector", "rrf"]
RRF_K = 60
DENSE_WEIGHT = 1.0
SNIPPET_CHARS = 240
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Hit:
    """One chunk found in one base."""

    base: str
    source: str
    title: str
    text: str
    snippet: str
    score: float


def search(
    conn: sqlite3.Connection,
    db_path: Path,
    base: str,
    query: str,
    *,
    top_k: int = 5,
    mode: Mode = "fused",
) -> list[Hit]:
    """The ``top_k`` best chunks of ``base`` for ``query``, best first."""
    from pegboard.search.text import STOPWORDS  # lazy: the ranking package loads numpy

    model, generation = base_model(conn, base)
    words = [w for w in (m.lower() for m in _WORD.findall(query)) if w not in STOPWORDS]
    lexical = _fts(conn, base, words) if mode != "vector" else []
    dense = DenseRanking([], 0.0, 0.0)
    if mode != "fts":
        dense = dense_ranking(conn, db_path, base, generation, model, query)
    if mode == "fts":
        ranked = lexical
    elif mode == "vector":
        ranked = dense.ranked
    elif mode == "rrf":
        ranked = _rrf(lexical, dense.ranked)
    else:
        ranked = _z_fusion(lexical, dense)
    return _hits(conn, base, ranked[:top_k], words)


def _fts(conn: sqlite3.Connection, base: str, words: list[str]) -> list[tuple[int, float]]:
    if not words:
        return []
    match = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
    (others,) = conn.execute("SELECT count(*) FROM bases WHERE name != ?", (base,)).fetchone()
    if others:  # every match's row is read to check its base (~9x slower at 39k chunks)
        sql = (
            "SELECT f.rowid, -bm25(chunks_fts, 2.0, 1.0) AS s FROM chunks_fts f"
            " JOIN chunks c ON c.id = f.rowid WHERE chunks_fts MATCH ? AND c.base = ?"
            " ORDER BY s DESC LIMIT ?"
        )
        params: tuple[object, ...] = (match, base, CANDIDATES)
    else:
        sql = (
            "SELECT rowid, -bm25(chunks_fts, 2.0, 1.0) AS s FROM chunks_fts"
            " WHERE chunks_fts MATCH ? ORDER BY s DESC LIMIT ?"
        )
        params = (match, CANDIDATES)
    return [(int(i), float(s)) for i, s in conn.execute(sql, params).fetchall()]


def _rrf(*rankings: list[tuple[int, float]]) -> list[tuple[int, float]]:
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, (chunk_id, _) in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _z_fusion(lexical: list[tuple[int, float]], dense: DenseRanking) -> list[tuple[int, float]]:
    """BM25 scaled to [0, 1] by its best, plus the cosine's z-score over the base (at least 0).

    Raw cosines of static embeddings sit in a narrow, query-dependent band; standardising them
    makes one weight mean the same for every query and every base.
    """
    scores: dict[int, float] = {}
    peak = max((s for _, s in lexical), default=0.0)
    for chunk_id, s in lexical:
        scores[chunk_id] = s / peak if peak > 0 else 0.0
    if dense.spread > 0:
        for chunk_id, s in dense.ranked:
            z = max((s - dense.mean) / dense.spread, 0.0)
            scores[chunk_id] = scores.get(chunk_id, 0.0) + DENSE_WEIGHT * z
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _hits(
    conn: sqlite3.Connection, base: str, ranked: list[tuple[int, float]], words: list[str]
) -> list[Hit]:
    hits: list[Hit] = []
    for chunk_id, score in ranked:
        row = conn.execute(
            "SELECT source, title, text FROM chunks WHERE id = ?", (chunk_id,)
        ).fetchone()
        if row is not None:
            source, title, text = row
            hits.append(Hit(base, source, title, text, snippet(text, words), round(score, 6)))
    return hits


def snippet(text: str, words: list[str], size: int = SNIPPET_CHARS) -> str:
    """About ``size`` characters of ``text`` around the first query word it contains."""
    flat = " ".join(text.split())
    if len(flat) <= size:
        return flat
    lowered = flat.lower()
    found = [i for i in (lowered.find(w) for w in words if len(w) > 2) if i >= 0]
    start = max(0, min(found) - size // 4) if found else 0
    if start:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 20 else start
    end = min(len(flat), start + size)
    cut = flat.rfind(" ", start, end) if end < len(flat) else end
    end = cut if cut > start + size // 2 else end
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")

"""Searching bases: FTS5 BM25 and cosine over the chunk vectors, fused, then one hit per document.

Vectors are scored in :mod:`pegboard.kb.vectors`. Fusion is standardised-score fusion, as in
tool_search: BM25 scaled to [0, 1] by the best match plus the cosine's z-score. Several bases are
searched as one collection: the FTS5 index is shared (one set of term statistics), BM25 is scaled
by the best match over every base searched and the cosine is standardised over every chunk of
the bases that share an embedding model, so a small base's best chunk does not outrank a large
base's by being its own maximum. By default the chunks then collapse into documents: a
document scores as the log-sum-exp of its chunks' scores at a temperature of a quarter of the
best chunk's score (its best chunk, plus a little for every other chunk that matches nearly as
well: a page that answers in several places beats one stray match, without a fixed count of
chunks deciding; the temperature follows the scores' scale, so the same holds for BM25 alone
or rank fusion) plus 0.5 times the z-score of its lead's cosine (its first chunk, scored
against the leads of every document searched: what the page as a whole is about) plus 0.25
times the z-score of its title's vector (the page's title embedded alone at ingestion, scored
against every title searched), times 0.7
when its lead says it is deprecated (a module kept for old code, "Deprecated since version
3.2: The optparse module is deprecated", ranks below the live module that does the same);
its best chunk gives the result its title (document › heading) and snippet.
``chunks=True`` returns the chunks themselves. bench/kb.py measures each step.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pegboard.kb.store import base_model
from pegboard.kb.vectors import CANDIDATES, dense_ranking

Mode = Literal["fused", "fts", "vector", "rrf"]
RRF_K = 60
DENSE_WEIGHT = 1.0
SPREAD = 4.0  # a document's log-sum-exp temperature is the best chunk's score / SPREAD
LEAD = 0.5  # weight of the z-score of a document's lead (its first chunk) (bench/kb.py (b))
TITLE = 0.25  # weight of the z-score of a document's title vector (bench/kb_titles.py)
DEPRECATED = 0.7  # factor on the score of a document whose lead says it is deprecated
SNIPPET_CHARS = 240
_WORD = re.compile(r"\w+", re.UNICODE)
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_DEPRECATED = re.compile(r"\W*deprecated\b", re.IGNORECASE)
_LEAD_PARAGRAPHS = 3  # "Source code: Lib/optparse.py", then the deprecation notice


@dataclass(frozen=True, slots=True)
class Hit:
    """One document (its best chunk) or one chunk found in one base."""

    base: str
    source: str
    title: str
    text: str
    snippet: str
    score: float
    content_hash: str = ""


def search(
    conn: sqlite3.Connection,
    db_path: Path,
    bases: Sequence[str],
    query: str,
    *,
    top_k: int = 5,
    mode: Mode = "fused",
    chunks: bool = False,
) -> list[Hit]:
    """The ``top_k`` best documents (or chunks) of ``bases`` for ``query``, best first."""
    from pegboard.search.text import STOPWORDS  # lazy: the ranking package loads numpy

    states = {base: base_model(conn, base) for base in dict.fromkeys(bases)}
    words = [w for w in (m.lower() for m in _WORD.findall(query)) if w not in STOPWORDS]
    lexical = _fts(conn, list(states), words) if mode != "vector" else []
    dense: list[tuple[int, float]] = []
    leads: dict[int, float] = {}
    titles: dict[int, float] = {}
    if mode != "fts":
        by_model: dict[str, dict[str, int]] = {}
        for base, (model, generation) in states.items():
            by_model.setdefault(model, {})[base] = generation
        for model, generations in sorted(by_model.items()):
            found = dense_ranking(conn, db_path, generations, model, query)
            dense.extend(found.chunks)
            leads.update(found.leads)
            titles.update(found.titles)
        dense.sort(key=lambda item: (-item[1], item[0]))
    if mode == "fts":
        ranked = lexical
    elif mode == "vector":
        ranked = dense
    elif mode == "rrf":
        ranked = _rrf(lexical, dense)
    else:
        ranked = _fuse(lexical, dense)
    fused = mode == "fused"  # the other modes are each one signal alone
    return _collect(
        conn,
        ranked,
        words,
        top_k,
        by_document=not chunks,
        leads=leads if fused else {},
        titles=titles if fused else {},
        demote=fused and not chunks,
    )


def _fts(conn: sqlite3.Connection, bases: list[str], words: list[str]) -> list[tuple[int, float]]:
    if not words or not bases:
        return []
    match = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
    (others,) = conn.execute(
        f"SELECT count(*) FROM bases WHERE name NOT IN ({','.join('?' * len(bases))})", bases
    ).fetchone()
    if others:  # every match's row is read to check its base (~9x slower at 39k chunks)
        sql = (
            "SELECT f.rowid, -bm25(chunks_fts, 2.0, 1.0) AS s FROM chunks_fts f"
            " JOIN chunks c ON c.id = f.rowid WHERE chunks_fts MATCH ?"
            f" AND c.base IN ({','.join('?' * len(bases))}) ORDER BY s DESC LIMIT ?"
        )
        params: tuple[object, ...] = (match, *bases, CANDIDATES)
    else:
        sql = (
            "SELECT rowid, -bm25(chunks_fts, 2.0, 1.0) AS s FROM chunks_fts"
            " WHERE chunks_fts MATCH ? ORDER BY s DESC LIMIT ?"
        )
        params = (match, CANDIDATES)
    rows = conn.execute(sql, params).fetchall()
    peak = max((float(s) for _, s in rows), default=0.0)
    return [(int(i), float(s) / peak if peak > 0 else 0.0) for i, s in rows]


def _rrf(*rankings: list[tuple[int, float]]) -> list[tuple[int, float]]:
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, (chunk_id, _) in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _fuse(
    lexical: list[tuple[int, float]], dense: list[tuple[int, float]]
) -> list[tuple[int, float]]:
    """BM25 scaled to [0, 1] by its best plus ``DENSE_WEIGHT`` times the cosine's z-score.

    Raw cosines sit in a narrow, query-dependent band; standardising them makes one weight mean
    the same for every query and every base.
    """
    scores = dict(lexical)
    for chunk_id, z in dense:
        scores[chunk_id] = scores.get(chunk_id, 0.0) + DENSE_WEIGHT * z
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _collect(
    conn: sqlite3.Connection,
    ranked: list[tuple[int, float]],
    words: list[str],
    top_k: int,
    *,
    by_document: bool,
    leads: dict[int, float],
    titles: dict[int, float],
    demote: bool = False,
) -> list[Hit]:
    """The ``top_k`` best hits: documents (the same content in two bases or at two paths is
    one), each scored as the log-sum-exp of its chunks' scores (temperature: the best score of
    ``ranked`` over ``SPREAD``) plus ``LEAD`` times its lead's score and ``TITLE`` times its
    title's, times ``DEPRECATED``
    when ``demote`` and its lead says it is deprecated; or chunks with distinct texts."""
    ids = [chunk_id for chunk_id, _ in ranked]
    rows: dict[int, tuple[str, str, str, str, str, int]] = {}
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        for chunk_id, *row in conn.execute(
            "SELECT c.id, c.base, c.source, c.title, c.text, d.content_hash, c.document"
            " FROM chunks c JOIN documents d ON d.id = c.document"
            f" WHERE c.id IN ({','.join('?' * len(part))})",
            part,
        ):
            rows[int(chunk_id)] = (row[0], row[1], row[2], row[3], row[4], int(row[5]))
    groups: dict[str, list[tuple[int, float]]] = {}
    for chunk_id, score in ranked:
        row = rows.get(chunk_id)
        if row is None:
            continue
        key = row[4] if by_document else " ".join(row[3].split()).lower()
        groups.setdefault(key, []).append((chunk_id, score))
    temperature = ranked[0][1] / SPREAD if ranked else 0.0
    stale = _deprecated(conn, {rows[m[0][0]][5] for m in groups.values()}) if demote else set()
    scored = []
    for members in groups.values():
        best_id, best = members[0]  # ``ranked`` is best first
        score = best
        if by_document:
            lead = max(leads.get(rows[chunk_id][5], 0.0) for chunk_id, _ in members)
            named = max(titles.get(rows[chunk_id][5], 0.0) for chunk_id, _ in members)
            score += LEAD * lead + TITLE * named
            if temperature > 0:
                spread = sum(math.exp((s - best) / temperature) for _, s in members)
                score += temperature * math.log(spread)
            if rows[best_id][5] in stale:  # lower, whatever the score's sign
                score -= (1.0 - DEPRECATED) * abs(score)
        scored.append((score, best_id))
    scored.sort(key=lambda item: (-item[0], item[1]))
    hits: list[Hit] = []
    for score, chunk_id in scored[:top_k]:
        base, source, title, text, digest, _ = rows[chunk_id]
        hits.append(Hit(base, source, title, text, snippet(text, words), round(score, 6), digest))
    return hits


def _deprecated(conn: sqlite3.Connection, documents: set[int]) -> set[int]:
    """The ``documents`` whose lead says they are deprecated: one of the first paragraphs of
    their first chunk starts with the word (Sphinx's ``deprecated`` directive under a module's
    title, "Deprecated since version 3.2: The optparse module is deprecated...", or a Markdown
    page's "**Deprecated**")."""
    found: set[int] = set()
    ids = sorted(documents)
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        # A document's chunks are stored in reading order, so its first is its lowest id: one
        # index seek per document (``position = 0`` would read every chunk of each).
        for document, text in conn.execute(
            "SELECT d.id, (SELECT c.text FROM chunks c WHERE c.document = d.id ORDER BY c.id"
            f" LIMIT 1) FROM documents d WHERE d.id IN ({','.join('?' * len(part))})",
            part,
        ):
            if text is None:
                continue
            paragraphs = _PARAGRAPH_BREAK.split(text.strip(), maxsplit=_LEAD_PARAGRAPHS)
            if any(_DEPRECATED.match(p) for p in paragraphs[:_LEAD_PARAGRAPHS]):
                found.add(int(document))
    return found


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

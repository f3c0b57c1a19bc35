"""Document-ranking variants on a python3-doc store, re-ranked in numpy (nothing re-embedded).

    .venv/bin/python bench/kb.py --keep DIR --skip-speed   # builds DIR/pydoc-minilm-l6.sqlite3
    .venv/bin/python bench/kb_sweep.py DIR/pydoc-minilm-l6.sqlite3
    .venv/bin/python bench/kb_sweep.py DIR/pydoc-minilm-l6.sqlite3 --session7 [--pieces]

Each row re-implements the fused per-document ranking of pegboard.kb.search (BM25 scaled by
its best match plus the cosine's z-score per chunk; a document is its best chunk plus SUPPORT
times its next NSUP: the library's aggregation before session 9, which uses log-sum-exp) with
one change, and prints hit@1 / hit@3 on the dev questions
(bench/kb_pydoc/questions.tsv) and the held-out ones (bench/kb_pydoc/holdout.tsv). The first
row must match bench/kb.py's "without the lead" row, the "lead 0.5" row its default.
``--session7`` runs session 7's variants over that default instead (``--pieces`` adds the two
that embed every sentence and every chunk's text past 128 tokens: minutes). Vectors computed
here (titles, headings, pieces) use the int8 path when the ``fast`` extra is installed
(``PEGBOARD_NO_ONNX=1`` for float32); query vectors are float32 either way, as in the library.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kb_quality import PYDOC_HOLDOUT, PYDOC_QUESTIONS, questions, row
from pegboard.kb.search import _WORD
from pegboard.search.encoder import shared_encoder
from pegboard.search.text import STOPWORDS


class Store:
    def __init__(self, db: Path) -> None:
        self.conn = sqlite3.connect(db)
        rows = self.conn.execute(
            "SELECT id, document, position, vector FROM chunks ORDER BY id"
        ).fetchall()
        self.ids = np.array([r[0] for r in rows])
        self.doc = np.array([r[1] for r in rows])
        self.pos = np.array([r[2] for r in rows])
        self.matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32).reshape(
            len(rows), -1
        )
        self.row_of = {int(i): k for k, i in enumerate(self.ids)}
        docs = self.conn.execute("SELECT id, source, title FROM documents").fetchall()
        self.name = {i: Path(s).name for i, s, _ in docs}
        self.title = {i: t for i, _, t in docs}
        self.docs = np.array(sorted(self.name))
        counts = np.unique(self.doc, return_counts=True)
        self.size = dict(zip(counts[0].tolist(), counts[1].tolist(), strict=True))
        self.encoder = shared_encoder()
        self._vectors: dict[str, np.ndarray] = {}
        self.question = ""  # the question being ranked, and its chunks' fused scores: for
        self.chunk_scores: dict[int, float] = {}  # a rerank (bench/kb_candidates.py)

    def vector(self, q: str) -> np.ndarray:
        if q not in self._vectors:
            self._vectors[q] = self.encoder.embed_query(q, lambda w: 1.0)
        return self._vectors[q]

    def fts(self, q: str, title_weight: float) -> dict[int, float]:
        words = [w for w in (m.lower() for m in _WORD.findall(q)) if w not in STOPWORDS]
        if not words:
            return {}
        match = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
        rows = self.conn.execute(
            f"SELECT rowid, -bm25(chunks_fts, {title_weight}, 1.0) s FROM chunks_fts"
            " WHERE chunks_fts MATCH ? ORDER BY s DESC LIMIT 100",
            (match,),
        ).fetchall()
        peak = max((s for _, s in rows), default=0.0)
        return {int(i): s / peak for i, s in rows} if peak > 0 else {}


def _z(values: np.ndarray) -> np.ndarray:
    out: np.ndarray = (values - values.mean()) / values.std()
    return out


def ranker(
    *,
    dense_weight: float = 1.0,
    support: float = 0.3,
    nsup: int = 2,
    title_weight: float = 2.0,
    extras: tuple[tuple[float, np.ndarray], ...] = (),
    size_penalty: float = 0.0,
    added: Callable[[Store, str], dict[int, float]] | None = None,
    pieces: tuple[np.ndarray, np.ndarray] | None = None,
    rerank: Callable[[Store, np.ndarray, list[int]], list[int]] | None = None,
) -> Callable[[Store, str], list[str]]:
    """``extras``: (weight, one vector per document in ``Store.docs`` order) whose cosine's
    z-score (negatives as 0) is added to the document's score. ``pieces``: (chunk row of each,
    vectors) of smaller pieces of the chunks (their sentences, or their text past the encoder's
    128 tokens); a chunk's cosine is then the best of its own and its pieces'. ``rerank``
    reorders the final document ids; ``added`` gives a score to add per document id for a
    question."""

    def rank(s: Store, q: str) -> list[str]:
        v = s.vector(q)
        cos = s.matrix @ v
        if pieces is not None:
            cos = cos.copy()
            np.maximum.at(cos, pieces[0], pieces[1] @ v)
        z = _z(cos)
        top = np.argpartition(-cos, 99)[:100]
        scores = dict(s.fts(q, title_weight))
        for i in top:
            key = int(s.ids[i])
            scores[key] = scores.get(key, 0.0) + dense_weight * max(float(z[i]), 0.0)
        groups: dict[int, list[float]] = {}
        for cid, sc in sorted(scores.items(), key=lambda t: -t[1]):
            groups.setdefault(int(s.doc[s.row_of[cid]]), []).append(sc)
        bonus: dict[int, float] = {}
        for weight, vectors in extras:
            for d, dz in zip(s.docs, _z(vectors @ v), strict=True):
                bonus[int(d)] = bonus.get(int(d), 0.0) + weight * max(float(dz), 0.0)
        more = added(s, q) if added else {}
        final = {
            d: m[0]
            + support * sum(m[1 : 1 + nsup])
            + bonus.get(d, 0.0)
            - size_penalty * float(np.log(s.size[d]))
            + more.get(d, 0.0)
            for d, m in groups.items()
        }
        ranked = [d for d, _ in sorted(final.items(), key=lambda t: -t[1])]
        if rerank is not None:
            s.question, s.chunk_scores = q, scores
            ranked = rerank(s, v, ranked)
        return [s.name[d] for d in ranked]

    return rank


def _short(title: str) -> str:
    return title.split(" — Python ")[0]  # the site's name, which every page's <title> repeats


def headings(s: Store) -> np.ndarray:
    """One vector per document: its short title and its section headings, in order."""
    texts = []
    for d in s.docs:
        titles = s.conn.execute(
            "SELECT DISTINCT title FROM chunks WHERE document = ? ORDER BY position", (int(d),)
        )
        heads = [t.split(" › ", 1)[1] for (t,) in titles if " › " in t]
        texts.append(_short(s.title[int(d)]) + "\n" + ", ".join(heads))
    vectors: np.ndarray = s.encoder.embed(texts)
    return vectors


def sentence_pieces(s: Store) -> tuple[np.ndarray, np.ndarray]:
    """Every sentence (20 characters or more) of every chunk, embedded alone (minutes)."""
    owner, texts = [], []
    for k, (text,) in enumerate(s.conn.execute("SELECT text FROM chunks ORDER BY id")):
        for piece in re.split(r"(?<=[.!?:])\s+|\n+", text):
            piece = " ".join(piece.split())
            if len(piece) >= 20:
                owner.append(k)
                texts.append(piece)
    return np.array(owner), s.encoder.embed(texts)


def tail_pieces(s: Store) -> tuple[np.ndarray, np.ndarray]:
    """Each chunk's text past the encoder's 128-token cut, in 128-token windows headed by the
    chunk's title (minutes): what the chunk's own vector never sees."""
    enc = s.encoder
    owner, texts = [], []
    rows = s.conn.execute("SELECT title, text FROM chunks ORDER BY id")
    for k, (title, text) in enumerate(rows):
        words = text.split()
        head = len(enc.token_ids(title)) - 2
        seen = len(enc.token_ids(f"{title}\n{text}")) - 2
        if seen < enc.max_tokens - 2:
            continue
        # about 1.3 word pieces a word: skip what the first window held, cut the rest
        step = max(int((enc.max_tokens - 2 - head) / 1.3), 16)
        for start in range(step, len(words), step):
            owner.append(k)
            texts.append(f"{title}\n{' '.join(words[start : start + step])}")
    return np.array(owner), s.encoder.embed(texts)


def prf(s: Store, k: int, beta: float) -> Callable[[str], np.ndarray]:
    """Pseudo-relevance feedback: the query vector plus beta x the mean of its k best chunks."""
    plain = s.vector

    def vector(q: str) -> np.ndarray:
        v = plain(q)
        top = np.argsort(-(s.matrix @ v))[:k]
        moved: np.ndarray = v + beta * s.matrix[top].mean(0)
        return moved / np.linalg.norm(moved)

    return vector


def lead_rrf(leads: np.ndarray, k: int) -> Callable[[Store, np.ndarray, list[int]], list[int]]:
    """Documents by reciprocal-rank fusion of the fused ranking and the leads' cosine ranking."""

    def rerank(s: Store, v: np.ndarray, ranked: list[int]) -> list[int]:
        by_lead = {int(d): r for r, d in enumerate(s.docs[np.argsort(-(leads @ v))])}
        score = {d: 1 / (k + i) + 1 / (k + by_lead[d]) for i, d in enumerate(ranked)}
        return sorted(score, key=lambda d: -score[d])

    return rerank


def main() -> None:
    s = Store(Path(sys.argv[1]))
    dev, held = questions(PYDOC_QUESTIONS), questions(PYDOC_HOLDOUT)
    leads = np.stack([s.matrix[s.doc == d][np.argmin(s.pos[s.doc == d])] for d in s.docs])
    lead = ((0.5, leads),)
    if "--session7" in sys.argv:  # this session's variants only, over the default with the lead
        heads = headings(s)
        variants: list[tuple[str, Callable[[Store, str], list[str]]]] = [
            ("default (lead 0.5)", ranker(extras=lead)),
            *[
                (f"+ title and headings vector {w}", ranker(extras=(*lead, (w, heads))))
                for w in (0.25, 0.5)
            ],
            ("BM25 title column weight 1", ranker(extras=lead, title_weight=1.0)),
            ("BM25 title column weight 4", ranker(extras=lead, title_weight=4.0)),
            *[
                (
                    f"documents by RRF of the ranking and the lead's, k {k}",
                    ranker(extras=lead, rerank=lead_rrf(leads, k)),
                )
                for k in (5, 60)
            ],
        ]
        if "--pieces" in sys.argv:
            sentences, tails = sentence_pieces(s), tail_pieces(s)
            variants += [
                ("chunk = best of it and its sentences", ranker(extras=lead, pieces=sentences)),
                (
                    "chunk = best of it and its text past 128 tokens",
                    ranker(extras=lead, pieces=tails),
                ),
            ]
        _table(s, variants, dev, held)
        plain = s.vector
        for label, vector in (
            ("query vector without stopwords", _no_stopwords(s)),
            ("pseudo-relevance feedback, 5 chunks, 0.5", prf(s, 5, 0.5)),
            ("pseudo-relevance feedback, 10 chunks, 0.5", prf(s, 10, 0.5)),
        ):
            s.vector = vector  # type: ignore[method-assign]
            _table(s, [(label, ranker(extras=lead))], dev, held, header=False)
            s.vector = plain  # type: ignore[method-assign]
        return
    titles = s.encoder.embed([s.title[int(d)] for d in s.docs])
    means = np.stack([s.matrix[s.doc == d].mean(0) for d in s.docs])
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    variants = [
        ("session 5 default (no lead)", ranker()),
        *[(f"dense weight {w}", ranker(dense_weight=w)) for w in (0.5, 2.0, 3.0)],
        *[(f"support {w}", ranker(support=w)) for w in (0.0, 0.5)],
        ("support 0.3 over the next 5 chunks", ranker(nsup=5)),
        ("BM25 title column weight 5 (default 2)", ranker(title_weight=5.0)),
        *[(f"size penalty {p} x log(chunks)", ranker(size_penalty=p)) for p in (0.05, 0.2)],
        *[
            (f"+ title vector (page title embedded) {w}", ranker(extras=((w, titles),)))
            for w in (0.5, 1.0)
        ],
        *[
            (f"+ mean of the page's chunk vectors {w}", ranker(extras=((w, means),)))
            for w in (0.5, 1.0)
        ],
        *[
            (f"+ lead (first chunk) {w}", ranker(extras=((w, leads),)))
            for w in (0.25, 0.5, 0.75, 1.0)
        ],
        ("+ lead 0.5 + title vector 0.25", ranker(extras=((0.5, leads), (0.25, titles)))),
        ("+ lead 0.5, dense weight 1.5", ranker(extras=((0.5, leads),), dense_weight=1.5)),
        ("+ lead 0.5, support over the next 5", ranker(extras=((0.5, leads),), nsup=5)),
    ]
    _table(s, variants, dev, held)


def _no_stopwords(s: Store) -> Callable[[str], np.ndarray]:
    def vector(q: str) -> np.ndarray:
        kept = " ".join(w for w in _WORD.findall(q) if w.lower() not in STOPWORDS)
        out: np.ndarray = s.encoder.embed_query(kept, lambda w: 1.0)
        return out

    return vector


def _table(
    s: Store,
    variants: list[tuple[str, Callable[[Store, str], list[str]]]],
    dev: list[tuple[str, str]],
    held: list[tuple[str, str]],
    *,
    header: bool = True,
) -> None:
    if header:
        print(
            f"| variant | dev hit@1 ({len(dev)}) | dev hit@3 "
            f"| held-out hit@1 ({len(held)}) | held-out hit@3 |"
        )
        print("| --- | ---: | ---: | ---: | ---: |")
    for label, rank in variants:
        cells = []
        for asked in (dev, held):
            names = [(rank(s, q)[:3], a) for q, a in asked]
            cells += [sum(n[:1] == [a] for n, a in names), sum(a in n for n, a in names)]
        print(row(label, *cells), flush=True)


if __name__ == "__main__":
    main()

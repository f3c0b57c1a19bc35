"""Finer vectors inside a chunk (multi-vector max-sim) on a python3-doc store, through the
library's own ranking (kb_search's fused per-document path, only the chunk cosines changed).

    .venv/bin/python bench/kb.py --keep DIR --skip-speed   # builds DIR/pydoc-minilm-l6.sqlite3
    .venv/bin/python bench/kb_pieces.py DIR/pydoc-minilm-l6.sqlite3 [--cache DIR]

A chunk packs several paragraphs (up to 1,200 characters, most past the encoder's 128 tokens)
and is embedded under its page's title ("time — Time access and conversions — Python 3.11.2
documentation › Functions"), so one API entry inside it weighs little in its vector. Each
piece below is embedded alone (no title) and points at its chunk; a chunk's cosine becomes
the best of its own and its pieces' (raw cosines, or each population standardised on its own
and the best z kept), then the library fuses and collects documents as always. Pieces:

- definition entries: a short line (at most 120 characters, not ending a sentence: an API
  signature, a glossary term) followed by a paragraph whose first sentence has 4 words or more,
  as "line\\nfirst sentence" ("time.sleep(secs)\\nSuspend execution of the calling thread for the
  given number of seconds.");
- paragraphs: every paragraph of 4 words or more.

Then the coarse pass (session 12): the paragraphs capped at a chunk's first 8, rounded to int8,
and scored only for the C chunks nearest the query by their own vector (``--near``), z by the
chunks' own cosines: dev only unless ``--held-out`` (look at held out once per candidate). The
same step in the library itself (stored ``chunk_pieces``) is on branch ``kbrank-pieces``.

Prints hit@1 / hit@3 on the dev questions (bench/kb_pydoc/questions.tsv) and the held-out ones
(holdout.tsv), the pieces' count and tokens, the encoder's CPU time for them, and the query-time
cost of the pieces' matrix at python3-doc's density tiled to 100,000 chunks.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np

from kb_quality import PYDOC_HOLDOUT, PYDOC_QUESTIONS, questions, row
from pegboard.kb import search as kb_search
from pegboard.kb import search_base
from pegboard.kb import vectors as kb_vectors
from pegboard.kb.embedding import load_embedder
from pegboard.search.encoder import shared_encoder

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
Pieces = tuple[np.ndarray, np.ndarray]  # (chunk row of each piece, unit vectors)


def entries(text: str) -> list[str]:
    paragraphs = [p.strip() for p in _PARAGRAPH.split(text) if p.strip()]
    out = []
    for line, following in itertools.pairwise(paragraphs):
        if len(line) > 120 or line.endswith((".", ":")):
            continue
        first = _SENTENCE_END.split(following, maxsplit=1)[0]
        if len(first.split()) >= 4 and first.endswith("."):
            out.append(line.rstrip("¶ ") + "\n" + first)
    return out


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in _PARAGRAPH.split(text) if len(p.split()) >= 4]


def embed_pieces(
    conn: sqlite3.Connection, split: Callable[[str], list[str]], cache: Path | None, name: str
) -> tuple[Pieces, int, float]:
    """(pieces, their tokens, the encoder's CPU seconds, 0 when read from ``cache``)."""
    owner, texts = [], []
    for k, (text,) in enumerate(conn.execute("SELECT text FROM chunks ORDER BY id")):
        for piece in split(text):
            owner.append(k)
            texts.append(piece)
    encoder = shared_encoder()
    tokens = sum(min(len(encoder.token_ids(t)), encoder.max_tokens) for t in texts)
    path = cache / f"pieces-{name}.npy" if cache else None
    if path is not None and path.is_file():
        vectors, cpu = np.load(path), 0.0
    else:
        started = time.process_time()
        vectors = encoder.embed(texts)
        cpu = time.process_time() - started
        if path is not None:
            np.save(path, vectors)
    return (np.asarray(owner), vectors), tokens, cpu


def capped(pieces: Pieces, cap: int) -> Pieces:
    """The first ``cap`` pieces of each chunk (pieces are in reading order)."""
    owner, vectors = pieces
    first = np.searchsorted(owner, owner, side="left")
    keep = np.arange(len(owner)) - first < cap
    return owner[keep], vectors[keep]


def int8(pieces: Pieces) -> Pieces:
    """The pieces' vectors rounded to int8 (one scale per vector) and back."""
    owner, vectors = pieces
    scale = np.abs(vectors).max(axis=1, keepdims=True) / 127.0
    return owner, (np.round(vectors / scale).astype(np.int8) * scale).astype(np.float32)


def dense_with(
    pieces: Pieces | None, standardise: bool, near: int | None = None
) -> Callable[..., kb_vectors.Dense]:
    """kb_vectors.dense_ranking for one base, a chunk's cosine raised to its best piece's;
    with ``near``, only the ``near`` best chunks by their own cosine are raised (the coarse
    pass), z by every chunk's own cosines."""

    def dense_ranking(
        conn: sqlite3.Connection, db_path: Path, generations: dict[str, int], model: str, q: str
    ) -> kb_vectors.Dense:
        ((base, generation),) = generations.items()
        m = kb_vectors._matrix(conn, db_path, base, generation)
        vector = load_embedder(model).embed_query(q, lambda w: 1.0)
        own = m.vectors @ vector
        if pieces is None:
            score = kb_vectors._standardised(own)
        elif near is not None:
            chosen = np.isin(pieces[0], np.argpartition(-own, near - 1)[:near])
            raised = own.copy()
            np.maximum.at(raised, pieces[0][chosen], pieces[1][chosen] @ vector)
            score = (raised.astype(np.float64) - float(own.mean())) / float(own.std())
        elif standardise:
            score = kb_vectors._standardised(own)
            np.maximum.at(score, pieces[0], kb_vectors._standardised(pieces[1] @ vector))
        else:
            raised = own.copy()
            np.maximum.at(raised, pieces[0], pieces[1] @ vector)
            score = kb_vectors._standardised(raised)
        top = min(kb_vectors.CANDIDATES, len(m.ids))
        best = np.argpartition(-score, top - 1)[:top]
        best = best[np.argsort(-score[best], kind="stable")]
        chunks = [(int(m.ids[i]), max(float(score[i]), 0.0)) for i in best]
        lead = kb_vectors._standardised(own[m.lead_rows])
        leads = {int(d): float(v) for d, v in zip(m.lead_documents, lead, strict=True) if v > 0}
        return kb_vectors.Dense(chunks, leads)

    return dense_ranking


def hits(db: Path, asked: list[tuple[str, str]]) -> tuple[int, int, list[int]]:
    at1 = at3 = 0
    ranks = []
    for question, answer in asked:
        names = [Path(h.source).name for h in search_base(db, "py", question, top_k=30)]
        rank = names.index(answer) + 1 if answer in names else 99
        at1, at3 = at1 + (rank == 1), at3 + (rank <= 3)
        ranks.append(rank)
    return at1, at3, ranks


def query_cost(per_chunk: float, chunks: int = 100_000, runs: int = 30) -> tuple[float, float]:
    """CPU ms (p50) of the chunk product alone, and of the pieces' product plus the max."""
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((chunks, 384), dtype=np.float32)
    n = int(chunks * per_chunk)
    owner = np.sort(rng.integers(0, chunks, n))
    pieces = rng.standard_normal((n, 384), dtype=np.float32)
    own, extra = [], []
    for _ in range(runs):
        v = rng.standard_normal(384, dtype=np.float32)
        t = time.process_time()
        cos = matrix @ v
        own.append((time.process_time() - t) * 1000)
        t = time.process_time()
        np.maximum.at(cos, owner, pieces @ v)
        extra.append((time.process_time() - t) * 1000)
    return statistics.median(own), statistics.median(extra)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="a python3-doc store built by bench/kb.py")
    parser.add_argument("--cache", type=Path, help="keep the pieces' vectors here")
    parser.add_argument("--near", type=int, nargs="*", default=[300, 1000, 2000, 3000])
    parser.add_argument(
        "--held-out", action="store_true", help="score the coarse-pass rows on held out too"
    )
    args = parser.parse_args()
    if args.cache:
        args.cache.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(args.store)
    (n_chunks,) = conn.execute("SELECT count(*) FROM chunks").fetchone()
    dev, held = questions(PYDOC_QUESTIONS), questions(PYDOC_HOLDOUT)
    built = {
        name: embed_pieces(conn, split, args.cache, name)
        for name, split in (("entries", entries), ("paragraphs", paragraphs))
    }
    print(f"\n{args.store}: {n_chunks:,} chunks\n")
    print("| pieces | count | per chunk | tokens | encoder CPU (s) | float32 MB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, ((owner, vectors), tokens, cpu) in built.items():
        per = len(owner) / n_chunks
        print(row(name, f"{len(owner):,}", f"{per:.2f}", f"{tokens:,}", f"{cpu:.0f}",
                  f"{vectors.nbytes / 1e6:.1f}"))  # fmt: skip
    print(
        f"\n| chunk cosine | dev hit@1 ({len(dev)}) | dev hit@3 | held-out hit@1 ({len(held)}) "
        "| held-out hit@3 | dev ranks changed (before -> after) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    variants: list[tuple[str, Pieces | None, bool]] = [("its own (main)", None, False)]
    for name, (pieces, _, _) in built.items():
        variants += [
            (f"max(own, {name}), raw cosines", pieces, False),
            (f"max(z own, z {name}), each standardised alone", pieces, True),
        ]
    kept = kb_search.dense_ranking
    base_ranks: list[int] = []
    try:
        for label, pieces, standardise in variants:
            kb_search.dense_ranking = dense_with(pieces, standardise)  # type: ignore[assignment]
            d1, d3, ranks = hits(args.store, dev)
            h1, h3, _ = hits(args.store, held)
            base_ranks = base_ranks or ranks
            moved = ", ".join(f"{a}->{b}" for a, b in zip(base_ranks, ranks, strict=True) if a != b)
            print(row(label, d1, d3, h1, h3, moved or "-"))
        print(
            "\nCoarse pass: paragraphs (the first 8 of each chunk), int8, scored only for the"
            " C chunks nearest the query by their own vector (z by the chunks' own cosines)\n"
        )
        print(f"| C | dev hit@1 ({len(dev)}) | dev hit@3 | held-out hit@1 | held-out hit@3 |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        near_pieces = int8(capped(built["paragraphs"][0], 8))
        for near in args.near:
            kb_search.dense_ranking = dense_with(near_pieces, False, near)  # type: ignore[assignment]
            d1, d3, _ = hits(args.store, dev)
            h1, h3 = hits(args.store, held)[:2] if args.held_out else ("-", "-")
            print(row(near, d1, d3, h1, h3))
    finally:
        kb_search.dense_ranking = kept
    print("\n| query-time product at 100,000 chunks (CPU p50, ms) | chunks | + pieces, max |")
    print("| --- | ---: | ---: |")
    for name, ((owner, _), _, _) in built.items():
        own, extra = query_cost(len(owner) / n_chunks)
        print(row(f"{name} at python3-doc's density", f"{own:.1f}", f"{extra:.1f}"))


if __name__ == "__main__":
    main()

"""A query-side adapter for the MiniLM-L6 encoder, measured through kb_search's own ranking.

    .venv/bin/python bench/kb_adapter.py STORE --adapter W.npy [--adapter ...] [--alpha 0.5,1]
        [--held-out]

STORE is a python3-doc store built with minilm-l6 (``bench/kb.py --keep DIR`` leaves
``DIR/pydoc-minilm-l6.sqlite3``). Each adapter (a 384 x 384 matrix made by
scripts/train_query_adapter.py) is applied to the question's vector before it is scored
against the stored chunk, lead and title vectors (``normalise(q + alpha (W q - q))``), the rest of
kb_search unchanged; the first row of each table is no adapter. Printed: hit@1 / hit@3 of the
dev questions (bench/kb_pydoc/questions.tsv), of the paraphrase notes (bench/kb_notes, a store
built here) and, only with ``--held-out`` (once, for the settings chosen on dev), of both
held-out sets.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import cast

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np

from kb_quality import (
    NOTES,
    PYDOC_HOLDOUT,
    PYDOC_HOLDOUT2,
    PYDOC_QUESTIONS,
    cell,
    kb_ranker,
    questions,
    row,
    score,
)
from pegboard.kb import ingest, search_base, vectors
from pegboard.kb.embedding import MINILM_L6
from pegboard.kb.search import Mode


class _Adapted:
    """The shared embedder with ``W`` applied to every query vector."""

    def __init__(self, inner: object, w: np.ndarray, alpha: float) -> None:
        self._inner = inner
        self._w = w.astype(np.float32)
        self._alpha = np.float32(alpha)

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def embed_query(self, text: str, weight: object) -> np.ndarray:
        q = self._inner.embed_query(text, weight)  # type: ignore[attr-defined]
        u = q + self._alpha * (self._w @ q - q)
        out: np.ndarray = (u / np.linalg.norm(u)).astype(np.float32)
        return out


@contextmanager
def adapted(w: np.ndarray | None, alpha: float) -> Iterator[None]:
    if w is None:
        yield
        return
    namespace = vars(vectors)  # the name dense_ranking looks up when it embeds the question
    original = namespace["load_embedder"]
    namespace["load_embedder"] = lambda model: _Adapted(original(model), w, alpha)
    try:
        yield
    finally:
        namespace["load_embedder"] = original


def mrr(db: Path, asked: list[tuple[str, str]], mode: Mode, depth: int = 20) -> float:
    """Mean reciprocal rank of the right page in the top ``depth`` (0 past it)."""
    total = 0.0
    for question, answer in asked:
        names = [
            Path(h.source).name for h in search_base(db, "py", question, top_k=depth, mode=mode)
        ]
        total += 1.0 / (names.index(answer) + 1) if answer in names else 0.0
    return total / len(asked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--adapter", type=Path, action="append", default=[])
    parser.add_argument("--alpha", default="1.0", help="comma list of interpolation weights")
    parser.add_argument("--held-out", action="store_true", help="also score both held-out sets")
    parser.add_argument("--notes", action="store_true", help="also score the paraphrase notes")
    parser.add_argument("--modes", default="fused", help="comma list: fused,vector")
    args = parser.parse_args()
    dev = questions(PYDOC_QUESTIONS)
    sets = [("dev", dev)]
    if args.held_out:
        sets += [("held out", questions(PYDOC_HOLDOUT)), ("held out 2", questions(PYDOC_HOLDOUT2))]
    notes_db = None
    tmp = tempfile.TemporaryDirectory()
    if args.notes:
        notes_db = Path(tmp.name) / "notes.sqlite3"
        ingest(notes_db, "notes", [NOTES], model=MINILM_L6)
    alphas = [float(a) for a in args.alpha.split(",")]
    runs: list[tuple[str, np.ndarray | None, float]] = [("none", None, 0.0)]
    for path in args.adapter:
        w = np.load(path)
        runs += [(f"{path.name}, alpha {a:g}", w, a) for a in alphas]
    head = ["adapter", "ranking"]
    for label, asked in sets:
        head += [f"hit@1 ({label}, {len(asked)})", f"hit@3 ({label})", f"MRR@20 ({label})"]
    if notes_db is not None:
        head += ["hit@1 (notes, 40)", "hit@3 (notes)"]
    print(row(*head))
    print(row(*(["---"] * 2 + ["---:"] * (len(head) - 2))))
    started = time.perf_counter()
    for label, w, alpha in runs:
        for mode in cast("list[Mode]", args.modes.split(",")):
            cells: list[str] = [label, mode]
            with adapted(w, alpha):
                ranker = kb_ranker(args.store, "py", mode)
                for _, asked in sets:
                    at1, at3, _ = score(asked, ranker)
                    cells += [cell(at1, len(asked)), cell(at3, len(asked))]
                    cells.append(f"{mrr(args.store, asked, mode):.3f}")
                if notes_db is not None:
                    asked = questions(NOTES / "questions.tsv")
                    at1, at3, _ = score(asked, kb_ranker(notes_db, "notes", mode))
                    cells += [cell(at1, len(asked)), cell(at3, len(asked))]
            print(row(*cells), flush=True)
    print(f"\n({time.perf_counter() - started:.0f} s)")
    tmp.cleanup()


if __name__ == "__main__":
    main()

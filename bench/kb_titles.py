"""Two document-level ranking candidates on a python3-doc store, through the library's own
ranking (kb_search's fused per-document path; only each document's lead term changed):

- a title vector: each document's title (its H1, "sqlite3 — DB-API 2.0 interface for SQLite
  databases — Python 3.11.2 documentation") embedded alone (317 vectors), its cosine with the
  query standardised over every title, negatives as 0, added as ``w`` x that z;
- a page-size correction: ``- b`` x ln(the document's chunk count) (a large page brings more
  chunks near the query, and log-sum-exp adds them up).

- a heading field: each chunk's title ("page › section heading", the site suffix removed)
  embedded alone, its z over every chunk added to the candidate chunk's cosine z at ``h``.

    .venv/bin/python bench/kb_titles.py /work/kbstore/pydoc-main.keep.sqlite3 \
        [--held-out STRIP W B H]

Dev questions only (bench/kb_pydoc/questions.tsv); ``--held-out`` scores that one candidate on
held out too (holdout.tsv; look once per candidate).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np

from kb_pieces import hits
from kb_quality import PYDOC_HOLDOUT, PYDOC_QUESTIONS, questions, row
from pegboard.kb import search as kb_search
from pegboard.kb import vectors as kb_vectors
from pegboard.kb.embedding import load_embedder
from pegboard.kb.vectors import Dense


def common_suffix(titles: list[str]) -> str:
    """The trailing " — site" segment every title shares ("" when they do not)."""
    ends = {t.rsplit(" — ", 1)[-1] for t in titles if " — " in t}
    return " — " + ends.pop() if len(ends) == 1 else ""


def document_fields(
    conn: sqlite3.Connection, strip: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(document ids, unit title vectors, ln chunk counts), one row per document; the titles'
    shared site suffix removed when ``strip``."""
    (model,) = conn.execute("SELECT model FROM bases").fetchone()
    rows = conn.execute(
        "SELECT d.id, d.title, count(c.id) FROM documents d JOIN chunks c ON c.document = d.id"
        " GROUP BY d.id ORDER BY d.id"
    ).fetchall()
    texts = [t for _, t, _ in rows]
    suffix = common_suffix(texts) if strip else ""
    texts = [t.removesuffix(suffix) for t in texts]
    titles = load_embedder(model).embed(texts)
    return (
        np.asarray([d for d, _, _ in rows], dtype=np.int64),
        np.asarray(titles, dtype=np.float32),
        np.log(np.asarray([n for _, _, n in rows], dtype=np.float64)),
    )


def heading_fields(conn: sqlite3.Connection) -> dict[int, tuple[int, np.ndarray]]:
    """chunk id -> (row, ...) and the unit vectors of the chunks' distinct titles ("page ›
    section heading", the site suffix removed), embedded alone."""
    (model,) = conn.execute("SELECT model FROM bases").fetchone()
    rows = conn.execute("SELECT id, title FROM chunks ORDER BY id").fetchall()
    suffix = common_suffix([t.split(" › ")[0] for _, t in rows])
    distinct = sorted({t.replace(suffix, "") for _, t in rows})
    at = {t: i for i, t in enumerate(distinct)}
    vectors = np.asarray(load_embedder(model).embed(distinct), dtype=np.float32)
    return {int(i): at[t.replace(suffix, "")] for i, t in rows}, vectors


def dense_with(fields, headings, w: float, b: float, h: float):
    """main's dense_ranking, each document's lead term raised by ``w`` x its title's z and
    lowered by ``b`` x ln(its chunk count) (folded into the lead, which _collect adds at
    LEAD), and each candidate chunk's z raised by ``h`` x its heading's z (over every chunk)."""
    documents, titles, log_size = fields
    heading_row, heading_vectors = headings
    kept = kb_vectors.dense_ranking

    def ranking(conn, db_path, generations, model, query):
        found = kept(conn, db_path, generations, model, query)
        if not (w or b or h):
            return found
        vector = load_embedder(model).embed_query(query, kb_vectors._idf_weight(conn, db_path))
        leads = found.leads
        if w or b:
            title_z = np.maximum(kb_vectors._standardised(titles @ vector), 0.0)
            leads = {
                int(d): leads.get(int(d), 0.0) + (w * float(t) - b * float(s)) / kb_search.LEAD
                for d, t, s in zip(documents, title_z, log_size, strict=True)
            }
        chunks = found.chunks
        if h:
            cos = heading_vectors @ vector
            ids = list(heading_row)
            rows = np.asarray([heading_row[i] for i in ids])
            z = np.maximum(kb_vectors._standardised(cos[rows]), 0.0)
            hz = dict(zip(ids, z.tolist(), strict=True))
            chunks = sorted(
                ((i, s + h * hz.get(i, 0.0)) for i, s in chunks), key=lambda x: (-x[1], x[0])
            )
        return Dense(chunks, leads)

    return ranking


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="a python3-doc store built by bench/kb.py")
    parser.add_argument(
        "--held-out", type=float, nargs=4, metavar=("STRIP", "W", "B", "H"),
        help="score this one candidate on held out too (STRIP 1: titles without the site suffix)",
    )  # fmt: skip
    args = parser.parse_args()
    conn = sqlite3.connect(args.store)
    plain, stripped = document_fields(conn, False), document_fields(conn, True)
    headings = heading_fields(conn)
    dev = questions(PYDOC_QUESTIONS)
    grid = [("main", plain, 0.0, 0.0, 0.0)]
    grid += [("title", plain, w, 0.0, 0.0) for w in (0.25, 0.5, 0.75, 1.0)]
    grid += [("size", plain, 0.0, b, 0.0) for b in (0.05, 0.1, 0.2, 0.3)]
    grid += [("title+size", plain, w, b, 0.0) for w in (0.5, 1.0) for b in (0.1, 0.2)]
    grid += [("title, no site suffix", stripped, w, 0.0, 0.0) for w in (0.1, 0.25, 0.5)]
    grid += [("heading (chunk)", plain, 0.0, 0.0, h) for h in (0.1, 0.25, 0.5, 1.0)]
    print(f"\n{args.store}: {len(plain[0])} documents, {len(headings[1])} distinct chunk titles\n")
    print(
        f"| field | title w | size b | heading h | dev hit@1 ({len(dev)}) | dev hit@3 "
        "| dev ranks changed |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    kept = kb_search.dense_ranking
    base: list[int] = []
    try:
        for label, fields, w, b, h in grid:
            kb_search.dense_ranking = dense_with(fields, headings, w, b, h)  # type: ignore[assignment]
            d1, d3, ranks = hits(args.store, dev)
            base = base or ranks
            moved = ", ".join(f"{x}->{y}" for x, y in zip(base, ranks, strict=True) if x != y)
            print(row(label, w, b, h, d1, d3, moved or "-"), flush=True)
        if args.held_out:
            held = questions(PYDOC_HOLDOUT)
            print(f"\n| held out ({len(held)}) | hit@1 | hit@3 | ranks changed |")
            print("| --- | ---: | ---: | --- |")
            out = []
            strip, w, b, h = args.held_out
            for candidate in [(plain, 0.0, 0.0, 0.0), (stripped if strip else plain, w, b, h)]:
                kb_search.dense_ranking = dense_with(candidate[0], headings, *candidate[1:])  # type: ignore[assignment]
                out.append(hits(args.store, held))
            moved = ", ".join(
                f"{x}->{y}" for x, y in zip(out[0][2], out[1][2], strict=True) if x != y
            )
            print(row("main", out[0][0], out[0][1], "-"))
            print(row(f"strip {strip:g}, w {w:g}, b {b:g}, h {h:g}", *out[1][:2], moved or "-"))
    finally:
        kb_search.dense_ranking = kept


if __name__ == "__main__":
    main()

"""Knowledge-base search quality and speed: one command, printed tables.

    .venv/bin/python bench/kb.py [--mb 50] [--queries 50]

(a) Paraphrase set: 40 short notes (bench/kb_notes/*.md) and 40 questions that ask for them in
    other words (bench/kb_notes/questions.tsv, "can I bring my dog to the office" for the pet
    policy). hit@1 / hit@3 of the note the question is about, per embedding model, for FTS5
    alone, vectors alone, reciprocal-rank fusion and standardised-score fusion (the default).
    The same notes saved as intranet HTML pages (nav bar, "related pages" sidebar and footer
    naming other notes around the note, as a saved web page has) go through the HTML reader.
(b) Speed: a generated Markdown corpus (~50 MB, one short section per chunk, ~100,000 chunks)
    ingested with ``pegboard.kb.ingest`` (MB/s, chunks/s); then the p50 of a search over it,
    fused (the kb_search path), vectors alone and plain FTS5 (a bare ``MATCH ... ORDER BY bm25``
    query on the same file) side by side.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from pegboard.kb import ingest, search_base
from pegboard.kb.embedding import MINILM, WORDLLAMA
from pegboard.kb.search import Mode
from pegboard.search.dense import dictionary
from pegboard.search.wordllama import semantic_available

NOTES = Path(__file__).resolve().parent / "kb_notes"
MODES: tuple[tuple[str, Mode], ...] = (
    ("FTS5 (BM25) alone", "fts"),
    ("vectors alone", "vector"),
    ("fused: reciprocal rank (k 60)", "rrf"),
    ("fused: BM25/max + z(cosine) (default)", "fused"),
)


def html_pages(root: Path) -> Path:
    """Every note as an intranet HTML page: the note in <main>, boilerplate naming others."""
    from html import escape

    notes = sorted(NOTES.glob("*.md"))
    titles = [n.read_text().splitlines()[0].lstrip("# ") for n in notes]
    pages = root / "html"
    pages.mkdir()
    for i, note in enumerate(notes):
        lines = note.read_text().splitlines()
        nav = "".join(f'<li><a href="/{t}">{escape(t)}</a></li>' for t in titles[:8])
        related = [titles[(i + k) % len(titles)] for k in (1, 2, 3)]
        aside = "".join(f'<li><a href="/{t}">{escape(t)} policy page</a></li>' for t in related)
        body = "".join(
            f"<h1>{escape(line[2:])}</h1>" if line.startswith("# ") else f"<p>{escape(line)}</p>"
            for line in lines
            if line.strip()
        )
        pages.joinpath(note.with_suffix(".html").name).write_text(
            f"<!doctype html><html><head><title>{escape(titles[i])} - Staff handbook</title>"
            f"</head><body><header><nav><ul>{nav}</ul></nav></header>"
            f"<main><article>{body}</article></main>"
            f"<aside><h2>Related pages</h2><ul>{aside}</ul></aside>"
            "<footer><p>Staff handbook, maintained by People Operations. Questions about a "
            "policy go to your manager or the help desk.</p></footer></body></html>"
        )
    return pages


def paraphrase(tmp: Path) -> None:
    questions = [
        line.split("\t")
        for line in (NOTES / "questions.tsv").read_text().splitlines()[1:]
        if line.strip()
    ]
    models = [MINILM] + ([WORDLLAMA] if semantic_available() else [])
    print(
        f"\n(a) paraphrase set: {len(questions)} questions over "
        f"{len(list(NOTES.glob('*.md')))} notes, as Markdown and as HTML pages\n"
    )
    print("| notes | embedder | ranking | hit@1 | hit@3 |")
    print("| --- | --- | --- | ---: | ---: |")
    html = html_pages(tmp)
    for model, folder, suffix in [(m, NOTES, ".md") for m in models] + [(MINILM, html, ".html")]:
        db = tmp / f"para-{model}-{suffix[1:]}.sqlite3"
        ingest(db, "notes", [folder], model=model)
        for label, mode in MODES:
            if mode == "fts" and model != models[0]:
                continue  # FTS does not depend on the embedder
            at1 = at3 = 0
            for question, md in questions:
                note = Path(md).with_suffix(suffix).name
                hits = search_base(db, "notes", question, top_k=3, mode=mode)
                names = [Path(h.source).name for h in hits]
                at1 += names[:1] == [note]
                at3 += note in names
            shown = "-" if mode == "fts" else model
            n = len(questions)
            kind = suffix[1:]
            print(f"| {kind} | {shown} | {label} | {at1}/{n} = {at1 / n:.2f} | {at3 / n:.2f} |")


def generate(root: Path, megabytes: float, seed: int = 7) -> int:
    """Markdown files of ~100 KB, each section a heading and a 60-word paragraph."""
    rng = np.random.default_rng(seed)
    words = rng.permutation(sorted(w for w in dictionary() if len(w) > 2))
    cdf = np.cumsum(1.0 / np.arange(1, len(words) + 1))  # Zipf-like, as in real text
    cdf /= cdf[-1]
    target, written, index = int(megabytes * 1_000_000), 0, 0
    while written < target:
        drawn = words[np.searchsorted(cdf, rng.random(200 * 63))].reshape(200, 63)
        sections = [f"\n## {' '.join(row[:3])}\n\n{' '.join(row[3:])}.\n" for row in drawn.tolist()]
        text = f"# Document {index}\n" + "".join(sections)
        (root / f"doc{index:05}.md").write_text(text)
        written += len(text.encode())
        index += 1
    return written


def speed(tmp: Path, megabytes: float, n_queries: int) -> None:
    corpus = tmp / "corpus"
    corpus.mkdir()
    size = generate(corpus, megabytes)
    db = tmp / "speed.sqlite3"
    started = time.perf_counter()
    report = ingest(db, "big", [corpus])
    elapsed = time.perf_counter() - started
    model = sqlite3.connect(db).execute("SELECT model FROM bases").fetchone()[0]
    print(
        f"\n(b) ingestion: {size / 1e6:.1f} MB in {len(report.indexed)} Markdown files, "
        f"model {model}\n"
    )
    print("| what | value |")
    print("| --- | ---: |")
    print(f"| chunks | {report.chunks:,} |")
    print(f"| time (s) | {elapsed:.1f} |")
    print(f"| MB/s | {size / 1e6 / elapsed:.2f} |")
    print(f"| chunks/s | {report.chunks / elapsed:,.0f} |")
    started = time.perf_counter()
    again = ingest(db, "big", [corpus])
    print(
        f"| re-add, nothing changed (s) | {time.perf_counter() - started:.2f} "
        f"({len(again.unchanged)} unchanged) |"
    )

    rng = np.random.default_rng(11)
    vocab = sorted(w for w in dictionary() if len(w) > 3)
    queries = [" ".join(rng.choice(vocab, 4)) for _ in range(n_queries)]
    started = time.perf_counter()
    search_base(db, "big", queries[0], top_k=10)
    cold = (time.perf_counter() - started) * 1000
    conn = sqlite3.connect(db)
    plain_sql = (
        "SELECT rowid, bm25(chunks_fts) AS s FROM chunks_fts WHERE chunks_fts MATCH ?"
        " ORDER BY s LIMIT 10"
    )

    def plain_fts(q: str) -> None:
        conn.execute(plain_sql, (" OR ".join(q.split()),)).fetchall()

    rows = [
        (
            "kb search, fused (FTS5 + vectors, the kb_search path)",
            lambda q: search_base(db, "big", q, top_k=10),
        ),
        (
            "kb search, vectors alone (numpy brute force)",
            lambda q: search_base(db, "big", q, top_k=10, mode="vector"),
        ),
        ("kb search, FTS5 alone", lambda q: search_base(db, "big", q, top_k=10, mode="fts")),
        ("baseline: plain FTS5 MATCH ... ORDER BY bm25 LIMIT 10", plain_fts),
    ]
    print(f"\nsearch over {report.chunks:,} chunks, {n_queries} queries of 4 words, top 10\n")
    print("| search | p50 (ms) | p90 (ms) |")
    print("| --- | ---: | ---: |")
    for label, fn in rows:
        fn(queries[-1])  # warm this path's SQLite pages and caches
        times = []
        for q in queries:
            t = time.perf_counter()
            fn(q)
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        print(f"| {label} | {statistics.median(times):.1f} | {times[int(len(times) * 0.9)]:.1f} |")
    print(f"| first fused search of the process (loads the vector matrix) | {cold:.0f} | |")
    print(f"\nsqlite-vec: {_sqlite_vec()}")


def _sqlite_vec() -> str:
    conn = sqlite3.connect(":memory:")
    if not hasattr(conn, "enable_load_extension"):
        return "not usable: this Python's sqlite3 was built without loadable extensions"
    return "loadable here (not measured)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the generated corpus")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paraphrase(Path(tmp))
        if not args.skip_speed:
            speed(Path(tmp), args.mb, args.queries)


if __name__ == "__main__":
    main()

"""Knowledge-base search quality and speed: one command, printed tables.

    .venv/bin/python bench/kb.py [--mb 50] [--queries 50] [--pydoc DIR] [--keep DIR]

(a) Paraphrase set: 40 short notes (bench/kb_notes/*.md) and 40 questions that ask for them in
    other words (bench/kb_notes/questions.tsv, "can I bring my dog to the office" for the pet
    policy), as Markdown and as intranet HTML pages (nav bar, "related pages" sidebar and footer
    naming other notes around the note's <main>). hit@1 / hit@3 per embedding model for FTS5
    alone, vectors alone, reciprocal-rank fusion and standardised-score fusion (the default).
(b) Public documentation: the Python 3.11 library reference as Debian's python3-doc installs it
    (``apt-get install python3-doc``; 317 HTML pages, 28 MB) and 33 questions worded unlike the
    pages (bench/kb_pydoc/questions.tsv): ingestion time per model, hit@1 / hit@3 per ranking,
    then LanceDB (vector search, and its hybrid search) on the very same chunks and vectors,
    quality and query time side by side. ``--keep DIR`` keeps these stores for the next run
    (unchanged pages are not embedded again).
(c) Both bases searched at once: one collection (the default) vs each base normalised alone.
(d) Speed (wall-clock p50 and, the machine's 2 cores being shared, this process's CPU time
    per query): a generated Markdown corpus (~50 MB, one short section per chunk, ~100,000
    chunks) ingested with the static table (MB/s, chunks/s) and a slice of it
    (``--encoder-mb``) with the sentence encoder; then the p50 of a search over the 100,000
    chunks per model, fused (the kb_search path), vectors alone, plain FTS5 and LanceDB's flat
    vector search side by side. The encoder's 100,000-chunk store holds the vectors of the
    slice's chunks over again (its brute-force scan costs the same whatever the values;
    embedding 100,000 chunks would take an hour on this machine's shared cores).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("LANCE_LOG", "error")  # its per-query deprecation warnings
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np

from kb_quality import paraphrase, pooled, pydoc, pydoc_with_baseline, row
from pegboard.kb import ingest, search_base
from pegboard.kb.embedding import MINILM, MINILM_L6, WORDLLAMA, load_embedder
from pegboard.kb.search import Mode
from pegboard.search.dense import dictionary
from pegboard.search.encoder import shared_encoder
from pegboard.search.encoder_onnx import onnx_available
from pegboard.search.wordllama import semantic_available

PYDOC = Path("/usr/share/doc/python3.11/html/library")


def generate(root: Path, megabytes: float, seed: int = 7) -> int:
    """Markdown files of ~100 KB, each section a heading and a 60-word paragraph."""
    rng = np.random.default_rng(seed)
    words = rng.permutation(sorted(w for w in dictionary() if len(w) > 2))
    cdf = np.cumsum(1.0 / np.arange(1, len(words) + 1))  # Zipf-like, as in real text
    cdf /= cdf[-1]
    target, written, index = int(megabytes * 1_000_000), 0, 0
    while written < target:
        drawn = words[np.searchsorted(cdf, rng.random(200 * 63))].reshape(200, 63)
        sections = [f"\n## {' '.join(r[:3])}\n\n{' '.join(r[3:])}.\n" for r in drawn.tolist()]
        text = f"# Document {index}\n" + "".join(sections)
        (root / f"doc{index:05}.md").write_text(text)
        written += len(text.encode())
        index += 1
    return written


def speed(tmp: Path, megabytes: float, n_queries: int, encoder_mb: float) -> None:
    corpus = tmp / "corpus"
    corpus.mkdir()
    size = generate(corpus, megabytes)
    files = sorted(corpus.glob("*.md"))
    db = tmp / "speed.sqlite3"
    started, cpu = time.perf_counter(), time.process_time()
    report = ingest(db, "big", [corpus], model=MINILM)
    elapsed, elapsed_cpu = time.perf_counter() - started, time.process_time() - cpu
    slice_dir = tmp / "slice"
    slice_dir.mkdir()
    for file in files[: max(1, round(encoder_mb * 10))]:  # the files are ~100 KB each
        shutil.copy(file, slice_dir / file.name)
    slice_size = sum(f.stat().st_size for f in slice_dir.iterdir())
    slices = []  # (label, chunks, seconds, CPU seconds) per encoder backend
    for backend in ("numpy", "onnx") if onnx_available() else ("numpy",):
        slice_db = tmp / f"slice-{backend}.sqlite3"
        _encoder_backend(backend)
        started, cpu = time.perf_counter(), time.process_time()
        sliced = ingest(slice_db, "big", [slice_dir], model=MINILM_L6)
        label = f"{MINILM_L6} ({'int8, ONNX Runtime' if backend == 'onnx' else 'float32, numpy'})"
        slices.append(
            (label, sliced.chunks, time.perf_counter() - started, time.process_time() - cpu)
        )
    _encoder_backend("auto")
    print(f"\n(d) ingestion: generated Markdown, {size / 1e6:.1f} MB in {len(files)} files\n")
    print("| embedder | MB | chunks | time (s) | MB/s | chunks/s | CPU (s) | MB/s of CPU |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for model, mb, chunks, secs, cpu_secs in (
        (MINILM, size / 1e6, report.chunks, elapsed, elapsed_cpu),
        *((label, slice_size / 1e6, n, t, c) for label, n, t, c in slices),
    ):
        print(
            row(
                model,
                f"{mb:.1f}",
                f"{chunks:,}",
                f"{secs:.1f}",
                f"{mb / secs:.3f}",
                f"{chunks / secs:,.0f}",
                f"{cpu_secs:.1f}",
                f"{mb / cpu_secs:.3f}",
            )
        )
    started = time.perf_counter()
    again = ingest(db, "big", [corpus])
    print(
        f"| re-add, nothing changed | | | {time.perf_counter() - started:.2f} "
        f"({len(again.unchanged)} unchanged) | | | | |"
    )
    encoder_db = tmp / "speed-l6.sqlite3"
    shutil.copy(db, encoder_db)
    _tile_vectors(encoder_db, slice_db)

    rng = np.random.default_rng(11)
    vocab = sorted(w for w in dictionary() if len(w) > 3)
    queries = [" ".join(rng.choice(vocab, 4)) for _ in range(n_queries)]
    conn = sqlite3.connect(db)
    plain_sql = (
        "SELECT rowid, bm25(chunks_fts) AS s FROM chunks_fts WHERE chunks_fts MATCH ?"
        " ORDER BY s LIMIT 10"
    )

    def plain_fts(q: str) -> None:
        conn.execute(plain_sql, (" OR ".join(q.split()),)).fetchall()

    rows: list[tuple[str, Callable[[str], object]]] = []
    for model, store in ((MINILM, db), (MINILM_L6, encoder_db)):
        rows += [
            (f"{model}: kb search, fused (the kb_search path)", _searcher(store, "fused")),
            (f"{model}: kb search, vectors alone", _searcher(store, "vector")),
        ]
        rows.append((f"{model}: baseline LanceDB flat vector search", _lance(store, tmp, model)))
    rows += [
        ("kb search, FTS5 alone", _searcher(db, "fts")),
        ("baseline: plain FTS5 MATCH ... ORDER BY bm25 LIMIT 10", plain_fts),
        (
            f"{MINILM_L6}: encoding the query alone (float32)",
            lambda q: load_embedder(MINILM_L6).embed_query(q, lambda w: 1.0),
        ),
    ]
    print(f"\nsearch over {report.chunks:,} chunks, {n_queries} queries of 4 words, top 10\n")
    print("| search | p50 (ms) | p90 (ms) | CPU p50 (ms) |")
    print("| --- | ---: | ---: | ---: |")
    for label, fn in rows:
        started = time.perf_counter()
        fn(queries[-1])  # warm this path's SQLite pages, caches and matrix
        first = (time.perf_counter() - started) * 1000
        times, cpu = [], []
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            fn(q)
            times.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
        times.sort()
        p50, p90 = statistics.median(times), times[int(len(times) * 0.9)]
        print(row(label, f"{p50:.1f}", f"{p90:.1f}", f"{statistics.median(cpu):.1f}"))
        if "fused" in label:
            what = f"{label.split(':')[0]}: first search of the process (loads the matrix)"
            print(row(what, f"{first:.0f}", "", ""))


def _encoder_backend(backend: str) -> None:
    """The process's shared encoder on ``backend`` from now on (numpy, or auto: ONNX Runtime
    where the ``fast`` extra is installed)."""
    if backend == "numpy":
        os.environ["PEGBOARD_NO_ONNX"] = "1"
    else:
        os.environ.pop("PEGBOARD_NO_ONNX", None)
    shared_encoder.cache_clear()


def _searcher(db: Path, mode: Mode) -> Callable[[str], object]:
    return lambda q: search_base(db, "big", q, top_k=10, mode=mode)


def _tile_vectors(target: Path, source: Path) -> None:
    """Give every chunk (and document title) of ``target`` a vector of ``source`` (in turn)
    and its model."""
    src = sqlite3.connect(source)
    (model,) = src.execute("SELECT model FROM bases").fetchone()
    vectors = [r[0] for r in src.execute("SELECT vector FROM chunks ORDER BY id")]
    with sqlite3.connect(target) as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id")]
        conn.executemany(
            "UPDATE chunks SET vector = ? WHERE id = ?",
            [(vectors[i % len(vectors)], chunk_id) for i, chunk_id in enumerate(ids)],
        )
        titled = src.execute("SELECT name FROM sqlite_master WHERE name = 'document_titles'")
        if titled.fetchone():  # the documents' title vectors too (main's code has none)
            titles = [r[0] for r in src.execute("SELECT vector FROM document_titles")]
            documents = [r[0] for r in conn.execute("SELECT document FROM document_titles")]
            conn.executemany(
                "UPDATE document_titles SET vector = ? WHERE document = ?",
                [(titles[i % len(titles)], d) for i, d in enumerate(documents)],
            )
        conn.execute("UPDATE bases SET model = ?, generation = generation + 1", (model,))


def _lance(db: Path, tmp: Path, model: str) -> Callable[[str], object]:
    try:
        import lancedb
        import pyarrow as pa
    except ImportError:
        return lambda q: None
    rows = sqlite3.connect(db).execute("SELECT id, vector FROM chunks ORDER BY id").fetchall()
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    table = pa.table(
        {
            "id": pa.array([r[0] for r in rows]),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), matrix.shape[1]),
        }
    )
    lance = lancedb.connect(tmp / f"lance-speed-{model}").create_table("chunks", data=table)
    embedder = load_embedder(model)

    def run(q: str) -> object:
        vector = embedder.embed_query(q, lambda w: 1.0)
        return lance.search(vector).distance_type("cosine").limit(10).select(["id"]).to_arrow()

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the generated corpus")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--pydoc", type=Path, default=PYDOC, help="python3-doc's library/")
    parser.add_argument("--keep", type=Path, help="keep the documentation stores here")
    parser.add_argument("--encoder-mb", type=float, default=1.0, help="the encoder's slice")
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args()
    models = [MINILM_L6, MINILM] + ([WORDLLAMA] if semantic_available() else [])
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        paraphrase(tmp, models)
        if args.pydoc.is_dir():
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
            stores = pydoc(tmp, args.pydoc, args.keep, models[:2])
            pydoc_with_baseline(stores, tmp)
            pooled(tmp / f"para-{MINILM_L6}-md.sqlite3", stores[MINILM_L6], tmp)
        else:
            print(f"\n(b) skipped: no {args.pydoc}; apt-get install python3-doc")
        if not args.skip_speed:
            speed(tmp, args.mb, args.queries, args.encoder_mb)


if __name__ == "__main__":
    main()

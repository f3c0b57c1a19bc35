"""A stored index ranked without numpy (``pegboard.search.flat``) against the numpy ranker.

    .venv/bin/python bench/flat_rank.py [--eval DIR] [--sample N]

For each eval catalog alone (livemcpbench 527 tools, metatool 199, sealtools 4,076) and its
queries: the default ranker's index is built, stored and read back (``StoredIndex``'s file),
then every query is ranked by both scorers of ``pegboard.search.index.rank`` over the same
mapped file; prints how many top-10 lists are identical (names and order), the largest score
difference, and the CPU per query of each.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from eval_data import EVAL_DIR  # bench/ is the script's directory
from pegboard.bench.data import build_catalog, load_dataset, load_tools
from pegboard.search import DENSE_FUSION, dense_signals
from pegboard.search import flat as flat_scoring
from pegboard.search.document import document_for
from pegboard.search.fusion import top_slots
from pegboard.search.index import ToolIndex, _scores
from pegboard.search.stored import index_key, read_index, write_index

DATASETS = ("livemcpbench", "metatool", "sealtools")
DEPTH = 10


def compare(eval_dir: Path, name: str, sample: int) -> list[str]:
    catalog = build_catalog(load_tools(eval_dir / name / "tools.jsonl"))
    queries = load_dataset(eval_dir / name / "queries.jsonl", sample).queries
    index = ToolIndex(dense=dense_signals(), fusion=DENSE_FUSION)
    documents = [document_for(e) for e in catalog.entries]
    index.upsert_documents(documents)
    with tempfile.TemporaryDirectory() as tmp:
        key = index_key(index, documents)
        path = Path(tmp) / f"{key}.index"
        write_index(path, key, index.state)
        state = read_index(path, key)
        names = state.lexical.names
        same = 0
        worst = 0.0
        cpu = {"numpy": 0.0, "flat": 0.0}
        for query in queries:
            started = time.process_time()
            dense = _scores(state, index.signals, index.fusion, query.query)
            ranked = top_slots(dense, names, DEPTH) if dense is not None else []
            cpu["numpy"] += time.process_time() - started
            started = time.process_time()
            plain = flat_scoring.scores(state, index.signals, index.fusion, query.query)
            flat = flat_scoring.top_slots(plain, names, DEPTH) if plain is not None else []
            cpu["flat"] += time.process_time() - started
            same += [n for n, _ in ranked] == [n for n, _ in flat]
            if dense is not None and plain is not None:
                worst = max(worst, max(abs(a - b) for a, b in zip(dense, plain, strict=True)))
    n = len(queries)
    return [
        f"{name} ({len(names):,} tools)",
        f"{n:,}",
        f"{same:,} ({same / n:.4f})",
        f"{worst:.2e}",
        f"{cpu['numpy'] / n * 1000:.2f}",
        f"{cpu['flat'] / n * 1000:.2f}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, default=os.environ.get("PEGBOARD_EVAL_DIR"))
    parser.add_argument("--sample", type=int, default=2000, help="queries per catalog")
    ns = parser.parse_args()
    eval_dir = ns.eval or EVAL_DIR
    print(
        "| catalog | queries | identical top-10 lists | largest score difference "
        "| numpy CPU ms per query | flat CPU ms per query |"
    )
    print("|" + " --- |" * 6)
    for name in DATASETS:
        print("| " + " | ".join(compare(eval_dir, name, ns.sample)) + " |", flush=True)


if __name__ == "__main__":
    main()

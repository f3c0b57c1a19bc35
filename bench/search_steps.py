"""tool_search with a task split into steps: how several queries in one call are merged.

    .venv/bin/python bench/search_steps.py [--eval DIR]

livemcpbench's tasks come with the annotators' step lists ("1. Get the trending topics ...
2. Create a word document ..."), which is what a model sends when it searches for each step of
a task. Each task is searched four ways, over livemcpbench's 527 tools alone and over the three
catalogs pooled (4,802 tools): the whole task as one query (what ``bench/search.py`` measures),
the steps joined into one query, the steps as a list merged the way ``tool_search`` merges
several queries (each query's best first, round by round), and the steps as a list merged by
reciprocal-rank fusion (k 60, each query ranked 50 deep: the merge pegboard used before).
Plain BM25 takes the task and the joined steps. The steps were written by annotators who knew
the tools, so the step rows show what a ranker achieves given a good decomposition, not what a
model will always send.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from eval_data import EVAL_DIR  # bench/ is the script's directory
from pegboard.bench.baselines import BM25Baseline
from pegboard.bench.data import Catalog, QueryRecord, build_catalog, load_tools
from pegboard.bench.runner import Tally
from pegboard.search import default_index
from pegboard.search.interface import SearchIndex

DATASETS = ("livemcpbench", "metatool", "sealtools")
DEFAULT_EVAL = EVAL_DIR
KS = (5, 10)
RRF_K, RRF_DEPTH = 60.0, 50
_NUMBER = re.compile(r"^\s*\d+[.)]\s*")

Ranker = Callable[[str, list[str], int], list[str]]


def steps_of(task: dict[str, Any]) -> list[str]:
    lines = (_NUMBER.sub("", line).strip() for line in str(task.get("steps", "")).split("\n"))
    return [line for line in lines if line]


def rrf(index: SearchIndex, queries: Sequence[str], limit: int) -> list[str]:
    fused: dict[str, float] = {}
    for query in queries:
        for rank, hit in enumerate(index.search([query], limit=RRF_DEPTH), start=1):
            fused[hit.name] = fused.get(hit.name, 0.0) + 1.0 / (RRF_K + rank)
    return [n for n, _ in sorted(fused.items(), key=lambda i: (-i[1], i[0]))[:limit]]


def index_rankers(label: str, index: SearchIndex) -> dict[str, Ranker]:
    def names(queries: Sequence[str], limit: int) -> list[str]:
        return [hit.name for hit in index.search(list(queries), limit=limit)]

    return {
        f"{label}: task": lambda task, steps, k: names([task], k),
        f"{label}: steps joined": lambda task, steps, k: names([" ".join(steps)], k),
        f"{label}: steps as a list (tool_search)": lambda task, steps, k: names(steps, k),
        f"{label}: steps as a list, RRF": lambda task, steps, k: rrf(index, steps, k),
    }


def bm25_rankers(catalog: Catalog) -> dict[str, Ranker]:
    bm25 = BM25Baseline()
    bm25.build(catalog.entries)
    return {
        "bm25: task": lambda task, steps, k: bm25.rank(task, k),
        "bm25: steps joined": lambda task, steps, k: bm25.rank(" ".join(steps), k),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval", type=Path, default=DEFAULT_EVAL)
    args = parser.parse_args(argv)
    lines = (args.eval / "livemcpbench" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    tasks = [task for line in lines if line.strip() and (task := json.loads(line))["gold"]]
    records = [QueryRecord.model_validate(task) for task in tasks]
    tools = {name: load_tools(args.eval / name / "tools.jsonl") for name in DATASETS}
    pools = {
        "livemcpbench (527 tools)": tools["livemcpbench"],
        "pooled (4,802 tools)": [tool for name in DATASETS for tool in tools[name]],
    }
    print(f"{len(tasks)} livemcpbench tasks with gold tools and annotated steps\n")
    print("| catalog | method: queries | hit@5 | hit@10 | recall@5 | recall@10 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for pool_name, pool in pools.items():
        catalog = build_catalog(pool)
        rankers: dict[str, Ranker] = {}
        factories: dict[str, Callable[[], SearchIndex]] = {
            "pegboard": lambda: default_index(cache=False),
            "pegboard-lexical": lambda: default_index(dense=False),
        }
        for label, factory in factories.items():
            index = factory()
            index.upsert(catalog.entries)
            rankers |= index_rankers(label, index)
        rankers |= bm25_rankers(catalog)
        for name, rank in rankers.items():
            tally = Tally(KS)
            for task, record in zip(tasks, records, strict=True):
                ranked = rank(task["query"], steps_of(task), max(KS))
                tally.add([catalog.ids[n] for n in ranked], record, 0.0)
            result = tally.result(name, "livemcpbench", 0.0)
            cells = [f"{result.hit[k]:.3f}" for k in KS] + [f"{result.recall[k]:.3f}" for k in KS]
            print(f"| {pool_name} | {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()

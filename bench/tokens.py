"""How long counting a catalog's tool tokens takes, and how many tokens the catalog has.

    .venv/bin/python bench/tokens.py [--dataset sealtools] [--repeat 7]

Rows, all through ``count_entries`` over real ``ToolEntry`` objects: counting every tool with
an empty cache (cold); again with the same entries (warm: per-Tool cache, what each request
pays); with equal definitions in new Tool objects (content-digest cache, as after a catalog
reload). Baselines in the same run: the chars/4 estimate (Cherry Studio's first generation)
and the same text counted with cl100k. Prints a Markdown table (best and median of N runs).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

from eval_data import EVAL_DIR  # bench/ is the script's directory
from pegboard.core.entry import ToolEntry
from pegboard.core.tokens import BpeTokenCounter, _tokenizer_for, count_entries
from pegboard.core.tool import Tool

EVAL = EVAL_DIR


def load_entries(dataset: str) -> list[ToolEntry]:
    entries = []
    with (EVAL / dataset / "tools.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row: dict[str, Any] = json.loads(line)
            tool = Tool(row["description"], row["input_schema"])
            entries.append(ToolEntry(row["name"], row["server"], tool))
    return entries


def timed(fn: Callable[[], int]) -> tuple[float, int]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dataset", default="sealtools")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    entries = load_entries(args.dataset)
    rebuilt = load_entries(args.dataset)  # equal definitions, new Tool objects
    texts = [e.definition.token_text for e in entries]

    start = time.perf_counter()
    _tokenizer_for("o200k_base")
    load_ms = (time.perf_counter() - start) * 1000
    counter = BpeTokenCounter()
    cl100k = BpeTokenCounter("cl100k_base")
    runs: dict[str, list[float]] = {}
    totals: dict[str, int] = {}

    def measure(label: str, fn: Callable[[], int]) -> None:
        seconds, total = timed(fn)
        runs.setdefault(label, []).append(seconds)
        assert totals.setdefault(label, total) == total

    cold, warm, content = (
        "cold cache",
        "warm, same Tool objects",
        "warm, equal content, new objects",
    )
    chars, cl = "baseline: chars/4 estimate", "baseline: cl100k, cold"
    for _ in range(args.repeat):
        counter.clear_cache()
        measure(cold, lambda: count_entries(entries, counter))
        measure(warm, lambda: count_entries(entries, counter))
        measure(content, lambda: count_entries(rebuilt, counter))
        measure(chars, lambda: sum(math.ceil(len(t) / 4) for t in texts))
        measure(cl, lambda: sum(cl100k.count_text(t) for t in texts))

    o200k = totals[cold]
    print(f"dataset: {args.dataset} ({len(entries):,} tools), {args.repeat} runs each")
    print(f"o200k encoding load (once per process): {load_ms:.0f} ms\n")
    print("| method | best (ms) | median (ms) | tokens | vs o200k |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, times in runs.items():
        total = totals[label]
        delta = "" if total == o200k else f"{(total - o200k) / o200k:+.1%}"
        name = label if label.startswith("baseline") else f"o200k count_entries, {label}"
        best, median = min(times) * 1000, statistics.median(times) * 1000
        print(f"| {name} | {best:.1f} | {median:.1f} | {total:,} | {delta} |")
    print(f"\nmean tokens per tool: {o200k / len(entries):.1f}")


if __name__ == "__main__":
    main()

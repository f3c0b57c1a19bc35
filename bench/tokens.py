"""How long counting a catalog's tool tokens takes, and how many tokens the catalog has.

    .venv/bin/python bench/tokens.py [--dataset sealtools] [--repeat 5]

Rows: loading the o200k encoding (once per process), counting every tool with an empty cache
(cold) and again with a filled one (warm), through ``count_entries`` over real ``ToolEntry``
objects. Baselines in the same run: the chars/4 estimate (Cherry Studio's first generation)
and the same text counted with cl100k. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

from pegboard.core.entry import ToolEntry
from pegboard.core.tokens import BpeTokenCounter, _tokenizer_for, count_entries, tool_text
from pegboard.core.tool import Tool

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"


def load_entries(dataset: str) -> list[ToolEntry]:
    entries = []
    with (EVAL / dataset / "tools.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row: dict[str, Any] = json.loads(line)
            tool = Tool(row["description"], row["input_schema"])
            entries.append(ToolEntry(row["name"], row["server"], tool))
    return entries


def timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="sealtools")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    entries = load_entries(args.dataset)
    texts = [tool_text(e.name, e.tool.description, e.tool.input_schema) for e in entries]

    load_s, _ = timed(lambda: _tokenizer_for("o200k_base"))
    counter = BpeTokenCounter()
    cold, warm = [], []
    total = 0
    for _ in range(args.repeat):
        counter.clear_cache()
        seconds, total = timed(lambda: count_entries(entries, counter))
        cold.append(seconds)
        seconds, again = timed(lambda: count_entries(entries, counter))
        assert again == total
        warm.append(seconds)

    chars_s, chars_total = timed(lambda: sum(math.ceil(len(t) / 4) for t in texts))
    cl100k = BpeTokenCounter("cl100k_base")
    cl_load_s, _ = timed(lambda: _tokenizer_for("cl100k_base"))
    cl_s, cl_total = timed(lambda: sum(cl100k.count_text(t) for t in texts))

    def err(n: int) -> str:
        return f"{(n - total) / total:+.1%}"

    ms = 1000.0
    rows = [
        ("o200k encoding load (once per process)", f"{load_s * ms:.0f}", "", ""),
        ("o200k count_entries, cold cache", f"{statistics.median(cold) * ms:.1f}", total, ""),
        ("o200k count_entries, warm cache", f"{statistics.median(warm) * ms:.1f}", total, ""),
        ("baseline: chars/4 estimate", f"{chars_s * ms:.1f}", chars_total, err(chars_total)),
        (
            f"baseline: cl100k (load {cl_load_s * ms:.0f} ms)",
            f"{cl_s * ms:.1f}",
            cl_total,
            err(cl_total),
        ),
    ]
    print(f"dataset: {args.dataset} ({len(entries):,} tools), median of {args.repeat} runs\n")
    print("| method | time (ms) | tokens | vs o200k |")
    print("| --- | ---: | ---: | ---: |")
    for label, seconds, tokens, delta in rows:
        shown = f"{tokens:,}" if isinstance(tokens, int) else tokens
        print(f"| {label} | {seconds} | {shown} | {delta} |")
    print(f"\nmean tokens per tool: {total / len(entries):.1f}")


if __name__ == "__main__":
    main()

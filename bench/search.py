"""Tool-search quality and speed on every eval dataset alone and pooled, baselines included.

    .venv/bin/python bench/search.py [--eval DIR] [--method NAME ...] [--json]

Runs ``pegboard bench search --json`` once per dataset and once over all three catalogs pooled
into one registry (each dataset's queries scored against the pooled catalog), then prints one
Markdown table (or the raw JSON reports). Every query file is reduced to an evenly spaced sample
of at most 2,000 queries (metatool has 21k, sealtools 2,054).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

# One query at a time is a tiny matrix product: BLAS worker threads only add wake-up latency
# (and contend with everything else on a shared machine). Must be set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from eval_data import EVAL_DIR  # bench/ is the script's directory
from pegboard.cli.app import app

DATASETS = ("livemcpbench", "metatool", "sealtools")
SAMPLE = 2000
DEFAULT_EVAL = EVAL_DIR


def bench(eval_dir: Path, names: tuple[str, ...], methods: list[str]) -> dict[str, Any]:
    args = ["bench", "search", "--json", "--sample", str(SAMPLE), "--k", "1,3,5,10"]
    for method in methods:
        args += ["--method", method]
    for name in names:
        args += ["--tools", str(eval_dir / name / "tools.jsonl")]
        args += ["--queries", str(eval_dir / name / "queries.jsonl")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        app(args, standalone_mode=False)
    report: dict[str, Any] = json.loads(out.getvalue())
    return report


def markdown(runs: list[tuple[str, dict[str, Any]]]) -> str:
    head = "| catalog | queries | method | hit@1 | hit@3 | hit@5 | hit@10 | recall@5 | recall@10"
    head += " | MRR | p50 ms | p99 ms | build s |"
    lines = [head, "|" + " --- |" * 13]
    for catalog, report in runs:
        for r in report["results"]:
            if r["dataset"] == "all":
                continue
            hit, recall = r["hit"], r["recall"]
            cells = [
                f"{catalog} ({report['tools']:,} tools)",
                f"{r['dataset']} ({r['queries']})",
                r["method"],
                *(f"{hit[k]:.3f}" for k in ("1", "3", "5", "10")),
                f"{recall['5']:.3f}",
                f"{recall['10']:.3f}",
                f"{r['mrr']:.3f}",
                f"{r['p50_ms']:.2f}",
                f"{r['p99_ms']:.2f}",
                f"{r['build_s']:.2f}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--eval", type=Path, default=os.environ.get("PEGBOARD_EVAL_DIR"))
    parser.add_argument("--json", action="store_true", help="print the raw reports")
    parser.add_argument("--method", action="append", default=[], help="only these methods")
    ns = parser.parse_args()
    eval_dir = ns.eval or DEFAULT_EVAL
    runs = [(name, bench(eval_dir, (name,), ns.method)) for name in DATASETS]
    runs.append(("pooled", bench(eval_dir, DATASETS, ns.method)))
    if ns.json:
        print(json.dumps(dict(runs), indent=2))
    else:
        print(markdown(runs))


if __name__ == "__main__":
    main()

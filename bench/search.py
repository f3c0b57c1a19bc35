"""Tool-search quality and speed on every eval dataset alone and pooled, baselines included.

    .venv/bin/python bench/search.py [--eval DIR] [--json]

Runs ``pegboard bench search`` once per dataset and once over all three catalogs pooled into
one registry (each dataset's queries scored against the pooled catalog). Every query file is
reduced to an evenly spaced sample of at most 2,000 queries (metatool has 21k, sealtools 2,054).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pegboard.cli.app import app

DATASETS = ("livemcpbench", "metatool", "sealtools")
SAMPLE = 2000
DEFAULT_EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"


def bench(eval_dir: Path, names: tuple[str, ...], extra: list[str]) -> None:
    args = ["bench", "search", "--sample", str(SAMPLE), *extra]
    for name in names:
        args += ["--tools", str(eval_dir / name / "tools.jsonl")]
        args += ["--queries", str(eval_dir / name / "queries.jsonl")]
    app(args, standalone_mode=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, default=os.environ.get("PEGBOARD_EVAL_DIR"))
    parser.add_argument("--json", action="store_true", help="one JSON object per run")
    parser.add_argument("--method", action="append", default=[], help="only these methods")
    ns = parser.parse_args()
    eval_dir = ns.eval or DEFAULT_EVAL
    extra = ["--json"] if ns.json else []
    for method in ns.method:
        extra += ["--method", method]
    for name in DATASETS:
        bench(eval_dir, (name,), extra)
    bench(eval_dir, DATASETS, extra)


if __name__ == "__main__":
    main()

"""What a client's first meta-tool call still compiles after ``pegboard serve``'s warm-up.

    .venv/bin/python bench/first_check.py [--before-src DIR ...] [--runs 5]

Each source tree (this checkout, then each ``--before-src``, put first on ``PYTHONPATH``) runs
in ``--runs`` fresh interpreters: :func:`pegboard.gateway.warmup.compile_meta_tool_checks` (the
warm-up's step), then the argument check of one ``tool_search`` call, as the gateway's call path
runs it on the event loop (``core.schema.validate_arguments``), then 100 more. Printed: the
first check's thread CPU (ms, median and range of the runs), a later check's, and the
top-level modules the first check imported. A first check above the later ones is work the
first search after an idle start pays on the event loop (at 224cf33: fastjsonschema's import
and code generation for the quick check, which the warm-up did not ready until search1's
change). Thread CPU, not wall time: a loaded machine does not stretch it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import sys, time
from pegboard.core.schema import validate_arguments
from pegboard.deferral.definitions import DEFINITIONS
from pegboard.gateway.warmup import compile_meta_tool_checks

compile_meta_tool_checks()
schema, args = DEFINITIONS["tool_search"].input_schema, {"query": "weather forecast"}
before = set(sys.modules)
started = time.thread_time()
validate_arguments(schema, args)
first = (time.thread_time() - started) * 1000
started = time.thread_time()
for _ in range(100):
    validate_arguments(schema, args)
later = (time.thread_time() - started) * 10
print(first, later, ",".join(sorted(m for m in set(sys.modules) - before if "." not in m)))
"""


def run(src: Path, runs: int) -> tuple[list[float], list[float], str]:
    firsts, laters, imported = [], [], ""
    for _ in range(runs):
        env = os.environ | {"PYTHONPATH": str(src)}
        done = subprocess.run(
            [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True
        )
        first, later, *rest = done.stdout.split()
        firsts.append(float(first))
        laters.append(float(later))
        imported = rest[0] if rest else "-"
    return firsts, laters, imported


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-src", action="append", default=[], help="an older src/")
    parser.add_argument("--runs", type=int, default=5, help="fresh interpreters per tree")
    ns = parser.parse_args()
    trees = [("this checkout", ROOT / "src")]
    trees += [(f"code before ({src})", Path(src)) for src in ns.before_src]
    print("| source | first check after the warm-up, ms CPU (range) | later check | imported |")
    print("| --- | ---: | ---: | --- |")
    for label, src in trees:
        firsts, laters, imported = run(src, ns.runs)
        print(
            f"| {label} | {statistics.median(firsts):.2f} ({min(firsts):.2f}-{max(firsts):.2f}) "
            f"| {statistics.median(laters):.3f} | {imported} |"
        )


if __name__ == "__main__":
    main()

"""tool_search over the stored index at rest: latency, CPU and what the process keeps resident.

    .venv/bin/python bench/stored_search.py [--before-src DIR] [--searches 200] [--rounds 5]

One child process per source tree (this checkout, and the code before with ``--before-src``,
put first on ``PYTHONPATH``) loads the stored index of a catalog from one shared data directory
(built before the timed rounds by each tree: their formats may differ) and answers the eval
sets' queries one at a time, as ``tool_search`` does in ``pegboard serve``. The children take
turns round by round. Per search: wall p50/p95 and the process's CPU (``/proc/self/schedstat``,
ns, so load does not stretch it); after the last search: VmRSS, RssAnon, RssFile, and the
resident pages of the index file itself (``/proc/self/smaps``). Catalogs: 527 tools
(LiveMCPBench) and ~5,000 (LiveMCPBench + SealTools + MetaTool pooled), the memory bench's
sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

EVAL = Path(os.environ.get("PEGBOARD_EVAL_DIR", "/work/shared/eval"))
SIZES = {
    "527": ("livemcpbench",),
    "5000": ("livemcpbench", "sealtools", "metatool"),
}

CHILD = r"""
import json, os, sys, time
from pathlib import Path
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as bench/search.py: one query at a time
from pegboard.bench.data import build_catalog, load_tools
from pegboard.search import default_index

def cpu_ns():
    return int(Path("/proc/self/schedstat").read_text().split()[0])

args = json.loads(sys.stdin.read())
tools = [t for name in args["sets"] for t in load_tools(Path(name) / "tools.jsonl")]
index = default_index(cache_dir=Path(args["cache"]), store=Path(args["store"]))
index.upsert(build_catalog(tools).entries)
queries = args["queries"]
index.search([queries[0]], limit=8)  # loads the stored index (or builds it: the warm-up run)
walls, cpus = [], []
for query in queries[1 : args["searches"] + 1]:
    t0, c0 = time.perf_counter(), cpu_ns()
    index.search([query], limit=8)
    walls.append(time.perf_counter() - t0)
    cpus.append(cpu_ns() - c0)
status = {}
for line in Path("/proc/self/status").read_text().splitlines():
    key = line.split(":", 1)[0]
    if key in ("VmRSS", "RssAnon", "RssFile"):
        status[key] = int(line.split()[1]) / 1024
index_kb, current = 0, False
for line in Path("/proc/self/smaps").read_text().splitlines():
    parts = line.split()
    if "-" in parts[0] and len(parts) >= 5 and ":" in parts[3]:
        current = len(parts) > 5 and parts[5].endswith(".index")
    elif current and parts[0] == "Rss:":
        index_kb += int(parts[1])
status["index"] = index_kb / 1024
print(json.dumps({"walls": walls, "cpus": cpus, "status": status}))
"""


def queries_of(sets: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    for name in sets:
        for line in (EVAL / name / "queries.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                found.append(json.loads(line)["query"])
    # Interleave the sets' queries so that every slice of the list mixes them.
    return found[::7] + found[1::7] + found[2::7]


def run_child(src: str | None, payload: dict[str, Any]) -> dict[str, Any]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"child failed: {done.stderr.strip().splitlines()[-1:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--before-src", help="the code before's src directory")
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="527,5000")
    opts = parser.parse_args()
    trees: dict[str, str | None] = {"this checkout": None}
    if opts.before_src:
        trees[f"code before ({opts.before_src})"] = opts.before_src
    print(f"load at start: {os.getloadavg()[0]:.1f}")
    rows: list[str] = []
    for size in opts.sizes.split(","):
        sets = SIZES[size]
        tmp = Path(tempfile.mkdtemp(prefix="stored-search-"))
        payload = {
            "sets": [str(EVAL / s) for s in sets],
            "cache": str(tmp / "vectors"),
            "store": str(tmp / "index"),
            "queries": queries_of(sets),
            "searches": opts.searches,
        }
        for src in trees.values():  # each tree builds and stores its index (formats differ)
            run_child(src, payload | {"searches": 0})
        found: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
        for _ in range(opts.rounds):
            for label, src in trees.items():
                found[label].append(run_child(src, payload))
        for label, runs in found.items():
            walls = sorted(w * 1000 for r in runs for w in r["walls"])
            cpus = [c / 1e6 for r in runs for c in r["cpus"]]
            last = {k: statistics.median(r["status"][k] for r in runs) for k in runs[0]["status"]}
            rows.append(
                f"| {size} tools | {label} | {statistics.median(walls):.2f} "
                f"| {walls[int(len(walls) * 0.95)]:.2f} | {statistics.mean(cpus):.2f} "
                f"| {last['VmRSS']:.1f} | {last['RssAnon']:.1f} | {last['RssFile']:.1f} "
                f"| {last['index']:.1f} |"
            )
    print(
        f"\ntool_search on the stored index, {opts.searches} searches x {opts.rounds} rounds "
        "per row (RSS: median over the rounds, after the last search)\n"
    )
    print(
        "| catalog | code | wall p50 ms | wall p95 ms | CPU ms per search | VmRSS MB "
        "| RssAnon MB | RssFile MB | index file resident MB |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(row)
    print(f"\nload at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

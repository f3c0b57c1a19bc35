"""CPU of re-listing a known upstream: what a start (or a ``list_changed``) costs the gateway.

    .venv/bin/python bench/relist.py [--sizes 527,5000] [--rounds 3]

A ``McpCatalog`` over ``bench/catalog_server.py`` (the catalogs of ``bench/versus.py``): one
refresh into a fresh store, then ``--rounds`` refreshes of the same, unchanged server, as a
restarted gateway does. Reported: the process CPU (user + system, all threads) of the first
and of the later refreshes, and the CPU of the listing checks alone (``tool_problem`` over
every definition, what the later refreshes skip for definitions that passed before). Run it
with ``PYTHONPATH=<src of an older pegboard>`` for the code before.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pegboard.mcp import McpCatalog, McpServerConfig, SqliteCatalogStore
from versus_stdio import CATALOG_SERVER, catalog_files


async def relists(size: str, rounds: int) -> tuple[float, list[float]]:
    args = [str(CATALOG_SERVER), *catalog_files(size)]
    config = McpServerConfig(id="up", command=sys.executable, args=args, list_timeout=120)
    with tempfile.TemporaryDirectory() as tmp:
        catalog = McpCatalog([config], SqliteCatalogStore(Path(tmp) / "catalog.sqlite3"))
        async with catalog.running(prewarm=False):
            times = []
            for _ in range(rounds + 1):
                started = time.process_time()
                await catalog.refresh_tools("up")
                times.append(time.process_time() - started)
    return times[0], times[1:]


def checks_cpu(size: str) -> float:
    from catalog_server import catalog
    from pegboard.mcp.listing import tool_problem

    raws = catalog([Path(p) for p in catalog_files(size)], None)
    started = time.process_time()
    for raw in raws:
        tool_problem(raw)
    return time.process_time() - started


async def main(ns: argparse.Namespace) -> None:
    logging.getLogger("pegboard").setLevel(logging.ERROR)  # the catalogs' skipped tools
    print("| tools | first refresh CPU (s) | later refreshes CPU p50 (s) | checks alone CPU (s) |")
    print("| ---: | ---: | ---: | ---: |")
    for size in ns.sizes.split(","):
        first, later = await relists(size, ns.rounds)
        checks = checks_cpu(size)
        print(f"| {size} | {first:.3f} | {statistics.median(later):.3f} | {checks:.3f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="527,5000")
    parser.add_argument("--rounds", type=int, default=3)
    anyio.run(main, parser.parse_args())

"""CPU per stdio ``tools/call`` as the upstream's tool count grows, pegboard beside the code
before, in one run.

    .venv/bin/python bench/call_scale.py --before-src /path/to/old/src [--tools 8,5000]

The upstream: the SDK test server with ``--tools N`` generated tools (N = 0 is its own 8); the
tool called is the last one it lists (``gen_<N-1>``, or ``echo``), so a look-up that scans the
server's tools pays for all of them. For each size, ``pegboard serve --no-defer`` of this
checkout and of ``--before-src`` run side by side over one listed catalog, in ``--blocks``
blocks of ``--calls`` sequential calls taking turns; the proxy process's CPU (schedstat, all
threads) per call, median and range of the blocks, and the ratio to the code before.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from versus_stdio import PEGBOARD, SDK_SERVER, Stdio, cpu_seconds, spawned


async def measure(stdio: Stdio, size: int, ns: argparse.Namespace) -> dict[str, list[float]]:
    name = f"tools{size}"
    stdio.upstream = [sys.executable, str(SDK_SERVER), "stdio", "--tools", str(size)]
    await stdio.prepare(name)
    tool, args = (f"gen_{size - 1}", {"query": "q"}) if size else ("echo", {"text": "hello"})
    rows = {"pegboard serve": stdio.pegboard_env(name)}
    if stdio.before_src:
        rows["pegboard, code before"] = stdio.pegboard_env(name, {"PYTHONPATH": stdio.before_src})
    found: dict[str, list[float]] = {label: [] for label in rows}
    async with AsyncExitStack() as stack:
        peers = []
        for env in rows.values():
            peer = await stack.enter_async_context(spawned([PEGBOARD, "serve", "--no-defer"], env))
            await peer.handshake()
            await peer.wait_listed(f"mcp__up__{tool}")
            peers.append(peer)
        for peer in peers:  # warm: the upstream started, every cache filled
            for _ in range(ns.calls):
                await peer.call(f"mcp__up__{tool}", args)
        for _ in range(ns.blocks):
            for label, peer in zip(rows, peers, strict=True):
                before = cpu_seconds(peer.process.pid)
                for _ in range(ns.calls):
                    await peer.call(f"mcp__up__{tool}", args)
                found[label].append((cpu_seconds(peer.process.pid) - before) * 1000 / ns.calls)
    return found


def print_table(results: dict[int, dict[str, list[float]]], ns: argparse.Namespace) -> None:
    print(f"\nstdio tools/call of the last tool listed, {ns.blocks} blocks of {ns.calls} calls\n")
    print("| upstream tools | server | CPU per call, median (ms) | blocks (min-max) | x before |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for size, found in results.items():
        medians = {label: statistics.median(v) for label, v in found.items()}
        base = medians.get("pegboard, code before")
        for label, blocks in found.items():
            ratio = f"x{medians[label] / base:.2f}" if base else "-"
            spread = f"{min(blocks):.3f}-{max(blocks):.3f}"
            print(f"| {size or 8} | {label} | {medians[label]:.3f} | {spread} | {ratio} |")


async def main(ns: argparse.Namespace) -> None:
    results: dict[int, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="pegboard-call-scale-") as tmp:
        stdio = Stdio(Path(tmp), "", ns.before_src, connect_timeout=120)
        for size in (int(s) for s in ns.tools.split(",")):
            results[size] = await measure(stdio, 0 if size <= 8 else size, ns)
    print_table(results, ns)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-src", help="the src/ of the code to compare with")
    parser.add_argument("--tools", default="8,5000", help="upstream sizes (8: its own tools)")
    parser.add_argument("--calls", type=int, default=200, help="calls per block")
    parser.add_argument("--blocks", type=int, default=6, help="blocks per row, taking turns")
    return parser.parse_args(argv)


if __name__ == "__main__":
    options: Any = parse()
    anyio.run(main, options)

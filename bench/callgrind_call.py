"""Instructions per stdio ``tools/call`` of ``pegboard serve``, counted by callgrind: a figure
that load does not move, for A/B steps of the call path.

    .venv/bin/python bench/callgrind_call.py [--src SRC ...] [--calls 200]

Each ``--src`` (a tree's ``src/``; none: this checkout) runs ``pegboard serve --no-defer`` under
``valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes`` in front of the SDK test
server (``echo``); after the handshake and 30 warm-up calls, instrumentation is switched on
(``callgrind_control -i on``) for ``--calls`` sequential calls only, then the counts are
dumped. Printed: thousands of instructions per call, all threads and the busiest two. Needs
valgrind (Debian's ``valgrind`` package); about a minute per tree.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import anyio

from versus_stdio import PEGBOARD, SDK_SERVER, Stdio, spawned


def _totals(out: Path) -> list[int]:
    """The instruction totals of each thread's dump file (``<out>.<part>-<thread>``)."""
    found = []
    for path in sorted(out.parent.glob(out.name + ".*")):
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("totals:"):
                found.append(int(line.split()[1]))
    return found


async def count(stdio: Stdio, src: str | None, calls: int, out: Path) -> list[int]:
    env = stdio.pegboard_env("cpu", {"PYTHONPATH": src} if src else None)
    valgrind = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--separate-threads=yes",
        f"--callgrind-out-file={out}",
    ]
    async with spawned([*valgrind, PEGBOARD, "serve", "--no-defer"], env) as peer:
        await peer.handshake()
        await peer.wait_listed("mcp__up__echo")
        for _ in range(30):
            await peer.call("mcp__up__echo", {"text": "hello"})
        pid = str(peer.process.pid)
        await anyio.run_process(["callgrind_control", "-i", "on", pid])
        for _ in range(calls):
            await peer.call("mcp__up__echo", {"text": "hello"})
        await anyio.run_process(["callgrind_control", "-i", "off", pid])
        await anyio.run_process(["callgrind_control", "-d", pid])  # written before the exit
    return sorted(_totals(out), reverse=True)


async def main(ns: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="pegboard-callgrind-") as tmp:
        stdio = Stdio(Path(tmp), "", None)
        stdio.upstream = [sys.executable, str(SDK_SERVER), "stdio"]
        await stdio.prepare("cpu")
        rows = []
        for index, src in enumerate(ns.src or [None]):
            totals = await count(stdio, src, ns.calls, Path(tmp) / f"callgrind-{index}.out")
            rows.append((src or "this checkout", totals))
    print(f"\ncallgrind, stdio tools/call echo, {ns.calls} calls (k instructions per call)\n")
    print("| tree | all threads | busiest thread | next thread |")
    print("| --- | ---: | ---: | ---: |")
    for label, totals in rows:
        per = [t / ns.calls / 1000 for t in totals] + [0.0, 0.0]
        print(f"| {label} | {sum(per):.0f} | {per[0]:.0f} | {per[1]:.0f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", action="append", help="a src/ tree to count (repeatable)")
    parser.add_argument("--calls", type=int, default=200, help="instrumented calls per tree")
    anyio.run(main, parser.parse_args())

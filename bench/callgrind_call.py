"""Instructions per stdio ``tools/call`` of ``pegboard serve``, counted by callgrind: a figure
that load does not move, for A/B steps of the call path.

    .venv/bin/python bench/callgrind_call.py [--src SRC ...] [--calls 200]

Each ``--src`` (a tree's ``src/``; none: this checkout) runs ``pegboard serve --no-defer`` under
``valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes`` in front of the SDK test
server (``echo``); after the handshake and 30 warm-up calls, instrumentation is switched on
(``callgrind_control -i on``) for ``--calls`` sequential calls only, then the counts are
dumped. Printed: thousands of instructions per call, all threads and the busiest two. Needs
valgrind (Debian's ``valgrind`` package); about a minute per tree.

With ``--http``, each tree runs ``pegboard serve --http --port 0 --no-defer`` instead, driven by
one raw JSON-RPC session on one kept-alive connection (``versus.AsyncRawSession``, what
``versus.py --only throughput`` sends): instructions per HTTP ``tools/call``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import anyio
import anyio.abc
from anyio.streams.text import TextReceiveStream

from versus_stdio import PEGBOARD, SDK_SERVER, Stdio, spawned

ECHO = {"text": "hello"}
SERVING = "pegboard serving MCP on "


def _totals(out: Path) -> list[int]:
    """The instruction totals of each thread's dump file (``<out>.<part>-<thread>``)."""
    found = []
    for path in sorted(out.parent.glob(out.name + ".*")):
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("totals:"):
                found.append(int(line.split()[1]))
    return found


def _valgrind(out: Path) -> list[str]:
    return [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--separate-threads=yes",
        f"--callgrind-out-file={out}",
    ]


async def count(stdio: Stdio, src: str | None, calls: int, out: Path) -> list[int]:
    env = stdio.pegboard_env("cpu", {"PYTHONPATH": src} if src else None)
    valgrind = _valgrind(out)
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


async def count_http(stdio: Stdio, src: str | None, calls: int, out: Path) -> list[int]:
    import versus  # bench/ is the script's directory; HTTP clients load only for --http

    env = stdio.pegboard_env("cpu", {"PYTHONPATH": src} if src else None)
    valgrind = _valgrind(out)
    args = [*valgrind, PEGBOARD, "serve", "--http", "--port", "0", "--no-defer"]
    async with await anyio.open_process(args, env=env) as process:
        try:
            url = await _serving_url(process)
            session = versus.AsyncRawSession(url)
            await session.open("mcp__up__echo")
            for _ in range(30):
                await session.rpc("tools/call", {"name": "mcp__up__echo", "arguments": ECHO})
            pid = str(process.pid)
            await anyio.run_process(["callgrind_control", "-i", "on", pid])
            for _ in range(calls):
                await session.rpc("tools/call", {"name": "mcp__up__echo", "arguments": ECHO})
            await anyio.run_process(["callgrind_control", "-i", "off", pid])
            await anyio.run_process(["callgrind_control", "-d", pid])
            await session.http.aclose()
        finally:
            process.terminate()
            with anyio.move_on_after(30):
                await process.wait()
    return sorted(_totals(out), reverse=True)


async def _serving_url(process: anyio.abc.Process) -> str:
    """The URL in serve's "pegboard serving MCP on ..." line (under valgrind: minutes)."""
    assert process.stderr is not None
    text = ""
    with anyio.fail_after(600):
        async for chunk in TextReceiveStream(process.stderr):
            text += chunk
            for line in text.splitlines():
                if line.startswith(SERVING):
                    return line.removeprefix(SERVING).split()[0]
    raise RuntimeError(f"no {SERVING!r} line; output: {text}")


async def main(ns: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="pegboard-callgrind-") as tmp:
        stdio = Stdio(Path(tmp), "", None)
        stdio.upstream = [sys.executable, str(SDK_SERVER), "stdio"]
        await stdio.prepare("cpu")
        rows = []
        for index, src in enumerate(ns.src or [None]):
            counter = count_http if ns.http else count
            totals = await counter(stdio, src, ns.calls, Path(tmp) / f"callgrind-{index}.out")
            rows.append((src or "this checkout", totals))
    transport = "HTTP" if ns.http else "stdio"
    print(f"\ncallgrind, {transport} tools/call echo, {ns.calls} calls (k instructions per call)\n")
    print("| tree | all threads | busiest thread | next thread |")
    print("| --- | ---: | ---: | ---: |")
    for label, totals in rows:
        per = [t / ns.calls / 1000 for t in totals] + [0.0, 0.0]
        print(f"| {label} | {sum(per):.0f} | {per[0]:.0f} | {per[1]:.0f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", action="append", help="a src/ tree to count (repeatable)")
    parser.add_argument("--calls", type=int, default=200, help="instrumented calls per tree")
    parser.add_argument("--http", action="store_true", help="pegboard serve --http instead")
    anyio.run(main, parser.parse_args())

"""Start-up and listing cost of ``pegboard serve`` and the CLI, beside their baselines, one run.

    .venv/bin/python bench/ready.py [--repeats 7] [--lists 50] [--calls 200]

Upstream: ``tests/mcp/servers/sdk_server.py`` with generated tools up to 527 in all (the size
of livemcpbench), listed once into the catalog by ``pegboard servers refresh``. Every figure is
a median over ``--repeats`` spawns (or requests), the rows alternating spawn by spawn, so load
on a shared machine hits all alike. Raw JSON-RPC lines on pipes; times are wall seconds.

Table 1, ready: spawn to the ``initialize`` answer and to the ``tools/list`` answer (sent
right after ``notifications/initialized``); for a *modern client* (MCP 2026-07-28, no
handshake) spawn to the ``server/discover`` answer and to its ``tools/list`` answer. Beside
them the wall time of ``python -c "import mcp.types"`` and ``python -c "import pegboard"``
(spawn to exit), a bare SDK server with one tool, and the 527-tool upstream itself.
``pegboard serve`` rows: with the ready snapshot of the previous start (warm: every start but
a config change's first), and with that row's snapshot deleted before each spawn (first start).

Table 2, the CLI: ``pegboard --help``, ``tools list --json``, ``tools search weather``, spawn to
exit, beside the same two imports.

Table 3, per request once running: ``tools/list`` (527 tools inline with ``--no-defer``, and
deferred) and ``tools/call echo``, sequential, against the upstream directly.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomli_w

from pegboard.gateway.ready import snapshot_path

ROOT = Path(__file__).resolve().parents[1]
SDK_SERVER = ROOT / "tests" / "mcp" / "servers" / "sdk_server.py"
PEGBOARD = str(Path(sys.executable).parent / "pegboard")
TOTAL_TOOLS = 527
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "b", "version": "0"},
}
# A 2026-07-28 client's envelope: no handshake, ``server/discover`` first, then tools/list.
MODERN = {
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "b", "version": "0"},
    }
}
BARE = '''
from mcp.server import MCPServer
server = MCPServer("bare")
@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text
server.run("stdio")
'''


def jsonrpc_line(msg_id: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    """One JSON-RPC message as a line (``msg_id`` None: a notification)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if msg_id is not None:
        message["id"] = msg_id
    if params is not None:
        message["params"] = params
    return (json.dumps(message) + "\n").encode()


class Peer:
    """One spawned MCP server spoken to in raw lines."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        self._next = 10

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def answer(self, msg_id: int) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            message: dict[str, Any] = json.loads(self.process.stdout.readline())
            if message.get("id") == msg_id:
                return message

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next += 1
        self.send(jsonrpc_line(self._next, method, params))
        return self.answer(self._next)

    def ready(self, modern: bool = False) -> tuple[float, float, int]:
        """Seconds to the first answer (``initialize``, or a modern client's
        ``server/discover``) and to the tools/list answer; tools listed."""
        if modern:
            self.send(jsonrpc_line(1, "server/discover", MODERN))
        else:
            self.send(jsonrpc_line(1, "initialize", INIT))
        self.answer(1)
        init = time.perf_counter() - self.started
        if modern:
            self.send(jsonrpc_line(2, "tools/list", MODERN))
        else:
            initialized = jsonrpc_line(None, "notifications/initialized")
            self.send(initialized + jsonrpc_line(2, "tools/list"))
        listed = self.answer(2)
        return init, time.perf_counter() - self.started, len(listed["result"]["tools"])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(60)


def _snapshot_of(args: list[str], env: dict[str, str]) -> Path:
    """The ready snapshot ``pegboard ARGS`` started with ``env`` reads (only that one)."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        path = snapshot_path(args)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert path is not None
    return path


def _exit_time(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def _median(values: list[float]) -> float:
    return statistics.median(values)


def setup(tmp: Path) -> tuple[dict[str, str], list[str]]:
    env = dict(os.environ, PEGBOARD_DATA_DIR=str(tmp / "data"))
    env["PEGBOARD_CONFIG"] = str(tmp / "config.toml")
    probe = Peer([sys.executable, str(SDK_SERVER), "stdio"], env)
    builtins = probe.ready()[2]
    probe.close()
    upstream = [sys.executable, str(SDK_SERVER), "stdio", "--tools", str(TOTAL_TOOLS - builtins)]
    config = {"servers": {"up": {"command": upstream[0], "args": upstream[1:]}}}
    (tmp / "config.toml").write_text(tomli_w.dumps(config))
    subprocess.run([PEGBOARD, "servers", "refresh"], env=env, capture_output=True, check=True)
    (tmp / "bare.py").write_text(BARE)
    return env, upstream


def ready_table(
    tmp: Path, env: dict[str, str], upstream: list[str], repeats: int
) -> dict[str, Any]:
    py = sys.executable

    def first() -> None:
        _snapshot_of(["serve", "--no-defer"], env).unlink(missing_ok=True)

    # label -> (argv, what to do before each spawn, whether the client is a modern one)
    spawned: dict[str, tuple[list[str], Callable[[], None] | None, bool]] = {
        "bare SDK server, 1 tool": ([py, str(tmp / "bare.py")], None, False),
        "bare SDK server, 1 tool, modern client": ([py, str(tmp / "bare.py")], None, True),
        f"upstream itself, {TOTAL_TOOLS} tools": (upstream, None, False),
        "pegboard serve (deferred), warm snapshot": ([PEGBOARD, "serve"], None, False),
        "pegboard serve (deferred), warm snapshot, modern client": (
            [PEGBOARD, "serve"],
            None,
            True,
        ),
        "pegboard serve --no-defer, warm snapshot": (
            [PEGBOARD, "serve", "--no-defer"],
            None,
            False,
        ),
        "pegboard serve --no-defer, warm snapshot, modern client": (
            [PEGBOARD, "serve", "--no-defer"],
            None,
            True,
        ),
        "pegboard serve --no-defer, first start (no snapshot)": (
            [PEGBOARD, "serve", "--no-defer"],
            first,
            False,
        ),
        "pegboard serve --no-defer, first start (no snapshot), modern client": (
            [PEGBOARD, "serve", "--no-defer"],
            first,
            True,
        ),
    }
    imports = {
        'python -c "import mcp.types"': [py, "-c", "import mcp.types"],
        'python -c "import pegboard"': [py, "-c", "import pegboard"],
    }
    for argv, _, modern in spawned.values():  # warm-up: page cache, the rows' snapshots
        peer = Peer(argv, env)
        peer.ready(modern)
        peer.close()
    runs: dict[str, list[tuple[float, float, int]]] = {k: [] for k in [*imports, *spawned]}
    for _ in range(repeats):
        for label, argv in imports.items():
            took = _exit_time(argv, env)
            runs[label].append((took, took, 0))
        for label, (argv, before, modern) in spawned.items():
            if before:
                before()
            peer = Peer(argv, env)
            runs[label].append(peer.ready(modern))
            peer.close()
    return {
        label: (_median([r[0] for r in found]), _median([r[1] for r in found]), found[0][2])
        for label, found in runs.items()
    }


def cli_table(env: dict[str, str], repeats: int) -> dict[str, float]:
    py = sys.executable
    rows = {
        'python -c "import mcp.types"': [py, "-c", "import mcp.types"],
        'python -c "import pegboard"': [py, "-c", "import pegboard"],
        "pegboard --help": [PEGBOARD, "--help"],
        "pegboard tools list --json": [PEGBOARD, "tools", "list", "--json"],
        "pegboard tools search weather": [PEGBOARD, "tools", "search", "weather"],
    }
    runs: dict[str, list[float]] = {label: [] for label in rows}
    for _ in range(repeats):
        for label, argv in rows.items():
            runs[label].append(_exit_time(argv, env))
    return {label: _median(found) for label, found in runs.items()}


def request_table(
    env: dict[str, str], upstream: list[str], lists: int, calls: int
) -> dict[str, Any]:
    peers = {
        "upstream directly": (Peer(upstream, env), "echo"),
        "pegboard serve --no-defer": (
            Peer([PEGBOARD, "serve", "--no-defer"], env),
            "mcp__up__echo",
        ),
        "pegboard serve (deferred)": (Peer([PEGBOARD, "serve"], env), None),
    }
    counts: dict[str, int] = {}
    for label, (peer, echo) in peers.items():
        counts[label] = peer.ready()[2]
        if echo:  # past the early answers: the full server runs
            peer.request("tools/call", {"name": echo, "arguments": {"text": "x"}})
    listing: dict[str, list[float]] = {label: [] for label in peers}
    calling: dict[str, list[float]] = {label: [] for label, (_, e) in peers.items() if e}
    for _ in range(lists):
        for label, (peer, _) in peers.items():
            started = time.perf_counter()
            peer.request("tools/list")
            listing[label].append((time.perf_counter() - started) * 1000)
    for _ in range(calls):
        for label in calling:
            peer, echo = peers[label]
            started = time.perf_counter()
            peer.request("tools/call", {"name": echo, "arguments": {"text": "hello"}})
            calling[label].append((time.perf_counter() - started) * 1000)
    for peer, _ in peers.values():
        peer.close()
    return {
        "list": {k: (_median(v), counts[k]) for k, v in listing.items()},
        "call": {k: _median(v) for k, v in calling.items()},
    }


def main(ns: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        env, upstream = setup(tmp)
        ready = ready_table(tmp, env, upstream, ns.repeats)
        cli = cli_table(env, ns.repeats)
        requests = request_table(env, upstream, ns.lists, ns.calls)
    base = ready['python -c "import mcp.types"'][1]
    rows = []
    for label, (init, listed, tools) in ready.items():
        head = f"{init:.3f} | {listed:.3f} | {tools}" if tools else f"(exit) | {listed:.3f} | "
        rows.append(f"{label} | {head} | x{listed / base:.2f}")
    _table(
        f"ready: spawn to answers, median of {ns.repeats} (s); x: tools/list over the import",
        "process | first answer (initialize; modern: discover) | tools/list answered | tools "
        "| x import mcp.types",
        rows,
    )
    cli_base = cli['python -c "import mcp.types"']
    _table(
        f"CLI: spawn to exit, median of {ns.repeats} (s)",
        "command | wall | x import mcp.types",
        [f"{label} | {took:.3f} | x{took / cli_base:.2f}" for label, took in cli.items()],
    )
    up = requests["list"]["upstream directly"][0]
    _table(
        f"tools/list once running, sequential, median of {ns.lists} (ms)",
        "server | tools listed | ms | x upstream",
        [f"{k} | {n} | {ms:.2f} | x{ms / up:.2f}" for k, (ms, n) in requests["list"].items()],
    )
    direct = requests["call"]["upstream directly"]
    _table(
        f"tools/call echo once running, sequential, median of {ns.calls} (ms)",
        "path | ms | added",
        [f"{k} | {ms:.3f} | {ms - direct:+.3f}" for k, ms in requests["call"].items()],
    )


def _table(title: str, head: str, rows: list[str]) -> None:
    """A markdown table: the first column left-aligned, the others right-aligned."""
    columns = head.count("|") + 1
    print(f"\n{title}\n\n| {head} |\n| --- |{' ---: |' * (columns - 1)}")
    for row in rows:
        print(f"| {row} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--lists", type=int, default=50)
    parser.add_argument("--calls", type=int, default=200)
    main(parser.parse_args())

"""``pegboard serve`` on stdio starts the upstream servers of its ready snapshot before it
imports anything heavy, and serves with those very processes (seen from outside)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from pegboard.gateway.ready import snapshot_path, write_snapshot
from tests.gateway.harness import (
    MCP_SERVERS,
    PEGBOARD,
    STARTUP_BOUND,
    Lines,
    gateway_env,
    run_cli,
    write_config,
)
from tests.gateway.test_ready import INIT

pytestmark = pytest.mark.anyio

SECRET = "s3cr3t-only-in-the-config"


def counted_server(starts: Path) -> dict[str, object]:
    """The SDK test server behind a shell that appends its pid to ``starts`` and exports it
    as ``PID`` (the server's ``env`` tool then tells which process answers)."""
    script = f'echo $$ >> {starts}; PID=$$ exec "$0" "$@"'
    args = ["-c", script, sys.executable, str(MCP_SERVERS / "sdk_server.py"), "stdio"]
    return {"command": "/bin/sh", "args": args, "env": {"TOKEN": SECRET}}


async def _serve_once(tmp_path: Path) -> tuple[str, str]:
    """One stdio serve: handshake, then the upstream's pid and TOKEN through ``env``."""
    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(
            [PEGBOARD, "serve", "--no-defer"], env=gateway_env(tmp_path)
        ) as process:
            wire = Lines(process)
            await wire.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
            await wire.next()
            await wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            found = []
            for msg_id, name in ((2, "PID"), (3, "TOKEN")):
                call = {"name": "mcp__up__env", "arguments": {"name": name}}
                await wire.send(
                    {"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": call}
                )
                while (answer := await wire.next()).get("id") != msg_id:
                    pass
                found.append(answer["result"]["content"][0]["text"])
            assert process.stdin is not None
            await process.stdin.aclose()
    return found[0], found[1]


async def test_a_second_start_serves_with_the_upstream_it_started_first(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    write_config(tmp_path, {"servers": {"up": counted_server(starts)}})
    await run_cli(tmp_path, "servers", "refresh")
    starts.unlink()

    await _serve_once(tmp_path)  # writes the snapshot and its spawn plan
    [snapshot] = (tmp_path / "data" / "ready").glob("*.json")
    text = snapshot.read_text()
    plan = json.loads(text)["spawn"]
    pid, token = await _serve_once(tmp_path)

    assert [entry["server"] for entry in plan] == ["up"]
    assert SECRET not in text  # the environment is read from the config file, not kept
    assert snapshot.stat().st_mode & 0o077 == 0
    assert token == SECRET
    # one start per serve: the second serve's early process was taken over, not doubled
    assert starts.read_text().split() == [starts.read_text().split()[0], pid]


def _probe_setup(tmp_path: Path) -> dict[str, str]:
    """A snapshot whose spawn plan starts one counted server; the environment of its serve."""
    starts = tmp_path / "starts"
    write_config(tmp_path, {"servers": {"up": counted_server(starts)}})
    env = gateway_env(tmp_path)
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        path = snapshot_path(["serve"])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert path is not None
    server = counted_server(starts)
    argv = [server["command"], *server["args"]]  # type: ignore[list-item]
    snapshot = {
        "versions": ["2025-06-18"],
        "init": {"capabilities": {}, "serverInfo": {"name": "pegboard", "version": "0"}},
        "tools": {},
        "spawn": [{"server": "up", "argv": argv, "cwd": None}],
    }
    write_snapshot(path, snapshot)
    return env


def test_the_early_start_spawns_the_plan_before_anything_heavy_is_imported(
    tmp_path: Path,
) -> None:
    env = _probe_setup(tmp_path)
    probe = (
        "import json, sys\n"
        "from pegboard.gateway import early\n"
        "early.start(['serve'])\n"
        "from pegboard.mcp import spawn\n"
        "heavy = [m for m in ('pydantic', 'mcp', 'anyio', 'typer') if m in sys.modules]\n"
        "print(json.dumps([sorted(spawn.waiting()), heavy]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )

    assert json.loads(done.stdout) == [["up"], []]


def test_the_client_is_answered_from_the_snapshot_while_the_upstreams_start(
    tmp_path: Path,
) -> None:
    # spawning a server is a fork and exec each (~10 ms): twenty of them before the answering
    # thread ran put the first answer at 0.24 s instead of 0.04 (bench/gateway.py start-up)
    env = _probe_setup(tmp_path)
    probe = (
        "import json\n"
        "from pegboard.gateway import early\n"
        "from pegboard.mcp import spawn\n"
        "answering = []\n"
        "real = spawn.prestart\n"
        "def prestart(launches):\n"
        "    answering.append(early._state is not None and early._state.thread is not None)\n"
        "    real(launches)\n"
        "spawn.prestart = prestart\n"
        "early.start(['serve'])\n"
        "early.take_over()\n"
        "print(json.dumps([answering, sorted(spawn.waiting())]))\n"
        "spawn.discard()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env=env,
        input="",
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )

    assert json.loads(done.stdout) == [[True], ["up"]]

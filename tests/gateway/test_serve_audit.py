"""``pegboard serve`` answers a call without waiting for its audit record (the file is written
by a background writer), and a stop by SIGTERM still writes every record before the exit."""

from __future__ import annotations

import fcntl
import os
import signal
from pathlib import Path

import anyio
import pytest

from pegboard.calls.audit_log import AUDIT_FILE, AuditLog
from tests.gateway.harness import (
    PEGBOARD,
    STARTUP_BOUND,
    RawRpc,
    gateway_env,
    run_cli,
    victim_server,
    write_config,
)

pytestmark = pytest.mark.anyio

CALLS = 5
HELD_S = 3.0  # longer than the stop takes (the upstream stopped, the stores closed)


async def test_calls_are_answered_while_the_audit_file_is_held_and_sigterm_loses_no_record(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, {"servers": {"victim": victim_server()}})
    code, _, _ = await run_cli(tmp_path, "servers", "refresh")
    assert code == 0
    data = tmp_path / "data"
    call = {"name": "mcp__victim__pid", "arguments": {}}

    # Another writer holds the audit file's lock (a CLI call, a slow disk): calls go on.
    lock = os.open(data / f"{AUDIT_FILE}.lock", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        async with await anyio.open_process([PEGBOARD, "serve"], env=gateway_env(tmp_path)) as p:
            rpc = RawRpc(p)
            with anyio.fail_after(STARTUP_BOUND):
                await rpc.initialize()
                for _ in range(CALLS):
                    answer = await rpc.request("tools/call", call)
                    assert "result" in answer, answer
            p.send_signal(signal.SIGTERM)
            with anyio.move_on_after(HELD_S):
                await p.wait()
            assert p.returncode is None  # stopped serving; its records wait for the lock
            fcntl.flock(lock, fcntl.LOCK_UN)
            with anyio.fail_after(STARTUP_BOUND):
                code = await p.wait()
    finally:
        os.close(lock)

    assert code == 0
    records = AuditLog(data / AUDIT_FILE).tail(50)
    assert [(r["tool"], r["outcome"]) for r in records] == [("mcp__victim__pid", "ok")] * CALLS

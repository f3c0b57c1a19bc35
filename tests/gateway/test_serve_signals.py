"""``pegboard serve`` over stdio stops on a signal while its stdin stays open, on a real
terminal (Ctrl-C typed) and with a pipe on stdin that never closes
(``sleep 30 | pegboard serve`` in a terminal), stopping its upstream servers."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.cli.terminal import PseudoTerminal
from tests.gateway.harness import (
    gateway_env,
    process_gone,
    run_cli,
    victim_server,
    write_config,
)

# Generous for a loaded 2-core machine; before the fix the gateway waited for the next line
# on stdin, which in these tests never comes.
EXIT_BOUND = 10.0

_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "terminal", "version": "0"},
    },
}
_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
_PID = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "mcp__victim__pid", "arguments": {}},
}


def _serve_code(tty_fd: int) -> str:
    """Python that makes the pty on ``tty_fd`` the controlling terminal, then runs serve."""
    return (
        f"import fcntl, termios; fcntl.ioctl({tty_fd}, termios.TIOCSCTTY, 0); "
        "from pegboard.cli import main; main()"
    )


def _lines(*messages: object) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def _victim_pid(term: PseudoTerminal) -> int:
    seen = term.expect('"id":2')
    found = re.search(r'"text":"(\d+)"', seen[seen.index('"id":2') - 200 :])
    assert found, seen
    return int(found.group(1))


def _wait_exit(term: PseudoTerminal) -> tuple[float, str]:
    started = time.monotonic()
    rest = term.read_to_end()
    return time.monotonic() - started, rest


@pytest.fixture
def refreshed(tmp_path: Path) -> dict[str, str]:
    write_config(tmp_path, {"servers": {"victim": victim_server()}})
    import anyio

    code, _, _ = anyio.run(run_cli, tmp_path, "servers", "refresh")
    assert code == 0
    return os.environ | gateway_env(tmp_path)


def test_serve_on_a_terminal_stops_at_ctrl_c_without_waiting_for_a_line(
    refreshed: dict[str, str],
) -> None:
    argv = [sys.executable, "-c", _serve_code(0), "serve"]
    with PseudoTerminal(argv, env=refreshed) as term:
        term.expect("pegboard serve: MCP over stdio")
        term.send(_lines(_INIT, _INITIALIZED, _PID).decode())
        victim = _victim_pid(term)
        term.send("\x03")  # the terminal sends SIGINT
        took, rest = _wait_exit(term)

    assert took < EXIT_BOUND
    assert term.returncode == 0
    assert "Traceback" not in rest
    assert process_gone(victim)


def test_serve_with_an_open_pipe_on_stdin_stops_at_sigterm(refreshed: dict[str, str]) -> None:
    read_end, write_end = os.pipe()
    argv = [sys.executable, "-c", _serve_code(1), "serve"]
    try:
        with PseudoTerminal(argv, env=refreshed, stdin=read_end) as term:
            os.close(read_end)
            os.write(write_end, _lines(_INIT, _INITIALIZED, _PID))
            victim = _victim_pid(term)
            term.signal(signal.SIGTERM)
            took, rest = _wait_exit(term)  # the pipe stays open all along
    finally:
        os.close(write_end)

    assert took < EXIT_BOUND
    assert term.returncode == 0
    assert "Traceback" not in rest
    assert process_gone(victim)

"""Helpers for the MCP tests: real servers from tests/mcp/servers, short timeouts."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pegboard.mcp import McpServerConfig

SERVERS = Path(__file__).parent / "servers"
SCRIPTED = str(SERVERS / "scripted.py")
SDK_SERVER = str(SERVERS / "sdk_server.py")


def scripted(server_id: str, *modes: str, log: Path | None = None, **kw: Any) -> McpServerConfig:
    """A raw scripted stdio server (starts in milliseconds) with 5 s timeouts.

    Generous on purpose: two shared cores can take a second or more to start a Python child.
    A test that is about a timeout sets that timeout itself."""
    args = [SCRIPTED]
    for mode in modes:
        args += ["--mode", mode]
    if log is not None:
        args += ["--log", str(log)]
    for flag in ("tools", "page_size", "names", "mode_file", "ref_url", "call_log", "id_log"):
        if flag in kw:
            args += [f"--{flag.replace('_', '-')}", str(kw.pop(flag))]
    timeouts = {"connect_timeout": 5.0, "list_timeout": 5.0, "call_timeout": 5.0}
    return McpServerConfig(id=server_id, command=sys.executable, args=args, **_timed(timeouts, kw))


def sdk_stdio(server_id: str, *extra: str, **kw: Any) -> McpServerConfig:
    """The official-SDK server over stdio (slower to start: imports the SDK)."""
    timeouts = {"connect_timeout": 20.0, "list_timeout": 5.0, "call_timeout": 5.0}
    args = [SDK_SERVER, "stdio", *extra]
    return McpServerConfig(id=server_id, command=sys.executable, args=args, **_timed(timeouts, kw))


def _timed(defaults: dict[str, float], given: dict[str, Any]) -> dict[str, Any]:
    """Test servers start fast: a first start gets the connect timeout unless one is given."""
    merged = defaults | given
    merged.setdefault("first_connect_timeout", merged["connect_timeout"])
    return merged


def requests_in(log: Path, method: str) -> int:
    if not log.exists():
        return 0
    return log.read_text().split().count(method)


@pytest.fixture(scope="module")
def http_server_ports() -> Iterator[tuple[int, int]]:
    """The official-SDK server on 127.0.0.1: (streamable HTTP port, SSE port), one per module."""
    proc = subprocess.Popen(
        [sys.executable, SDK_SERVER, "http", "--tools", "5", "--prefix", "web"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # bounded by pytest-timeout; the server prints it first
        assert line.startswith("PORT "), line
        yield int(line.split()[1]), int(line.split()[2])
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def http_server_url(http_server_ports: tuple[int, int]) -> str:
    return f"http://127.0.0.1:{http_server_ports[0]}/mcp"


@pytest.fixture(scope="module")
def sse_server_url(http_server_ports: tuple[int, int]) -> str:
    return f"http://127.0.0.1:{http_server_ports[1]}/sse"

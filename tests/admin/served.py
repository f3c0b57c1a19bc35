"""A real ``pegboard serve --http`` (or ``pegboard ui``) subprocess for the admin UI's tests."""

from __future__ import annotations

import re
import select
import subprocess
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx2
from anyio.from_thread import BlockingPortal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.harness import PEGBOARD, STARTUP_BOUND, gateway_env, write_config

READY = re.compile(r"(pegboard serving MCP on|pegboard admin UI on) (http://\S+)")


@dataclass
class Served:
    """A running gateway: its base URL (``http://127.0.0.1:PORT``), MCP URL and stderr."""

    base: str
    url: str
    process: subprocess.Popen[str]
    tmp_path: Path
    lines: list[str] = field(default_factory=list)

    @property
    def admin(self) -> str:
        return f"{self.base}/admin"

    def client(self, **kwargs: Any) -> httpx2.Client:
        return httpx2.Client(base_url=self.base, timeout=30, **kwargs)

    def stderr(self) -> str:
        """What the process wrote to stderr so far (read without blocking)."""
        assert self.process.stderr is not None
        while select.select([self.process.stderr], [], [], 0)[0]:
            line = self.process.stderr.readline()
            if not line:
                break
            self.lines.append(line)
        return "".join(self.lines)


@contextmanager
def serving(
    tmp_path: Path,
    config: Mapping[str, Any],
    *args: str,
    env: Mapping[str, str] | None = None,
    command: tuple[str, ...] = ("serve", "--http", "--port", "0"),
    refreshed: bool = False,
) -> Iterator[Served]:
    """``pegboard serve --http`` (or ``command``) on a free port with ``config``; with
    ``refreshed`` the servers' tools are cached first (``pegboard servers refresh``)."""
    write_config(tmp_path, config)
    if refreshed:
        subprocess.run(
            [PEGBOARD, "servers", "refresh"],
            env=gateway_env(tmp_path) | dict(env or {}),
            check=True,
            capture_output=True,
            timeout=STARTUP_BOUND,
        )
    process = subprocess.Popen(
        [PEGBOARD, *command, *args],
        env=gateway_env(tmp_path) | dict(env or {}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    assert process.stderr is not None
    deadline = time.monotonic() + STARTUP_BOUND
    try:
        while time.monotonic() < deadline:
            if not select.select([process.stderr], [], [], 1)[0]:
                continue
            line = process.stderr.readline()
            if not line:
                break
            lines.append(line)
            found = READY.search(line)
            if found:
                url = found.group(2)
                base = url.split("/admin")[0].split("/mcp")[0]
                yield Served(base, url, process, tmp_path, lines)
                return
        raise AssertionError(f"pegboard did not start: {''.join(lines)}")
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@asynccontextmanager
async def serving_async(*args: Any, **kwargs: Any) -> AsyncIterator[Served]:
    """:func:`serving` for an async test: started and stopped in a worker thread, so the
    start (a refresh, then the wait for the port) never blocks the test's event loop."""
    started = serving(*args, **kwargs)
    served = await anyio.to_thread.run_sync(started.__enter__)
    try:
        yield served
    finally:
        await anyio.to_thread.run_sync(started.__exit__, None, None, None)


CSRF = re.compile(r'name="csrf-token" content="([^"]+)"')


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "no CSRF token on the page"
    return found.group(1)


@contextmanager
def mcp_client(portal: BlockingPortal, url: str) -> Iterator[Client]:
    """A real SDK client over streamable HTTP, held open (on the portal's event loop)."""
    http = portal.call(lambda: _async_http())
    client = Client(streamable_http_client(url, http_client=http), mode="legacy")
    with portal.wrap_async_context_manager(client) as connected:
        yield connected
    portal.call(http.aclose)


async def _async_http() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(timeout=30)

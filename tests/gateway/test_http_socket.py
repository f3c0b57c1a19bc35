"""The HTTP listener's accepted connections send without Nagle's delay (TCP_NODELAY).

Without it every request after the first on a kept-alive connection waits ~40 ms for the
client's delayed ACK, because the response's header and body are written separately. The
check is on the socket option of the connection uvicorn accepted, not on a time.
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest

from pegboard.gateway.transports import (
    _quiet_server_class,
    _serve_until_cancelled,
    bind_listening_socket,
)

pytestmark = pytest.mark.anyio


async def _ok(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _nodelay(connection: Any) -> int:
    sock = connection.transport.get_extra_info("socket")
    return int(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
async def test_accepted_http_connections_have_tcp_nodelay(host: str) -> None:
    if host == "::1" and not socket.has_ipv6:
        reason = "no IPv6 on this machine: enable the ::1 loopback to run this case"
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    import uvicorn

    config = uvicorn.Config(_ok, log_level="error", lifespan="off")
    async with serving(config, host) as (server, url), httpx2.AsyncClient() as client:
        for _ in range(2):  # the second request rides the kept-alive connection
            answer = await client.get(url)
            assert answer.text == "ok"
        connections = list(server.server_state.connections)
        assert len(connections) == 1
        assert [_nodelay(c) for c in connections] == [1]


@asynccontextmanager
async def serving(config: Any, host: str = "127.0.0.1") -> AsyncIterator[tuple[Any, str]]:
    """uvicorn serving ``config`` on a loopback port of ``host`` (as ``pegboard serve`` binds
    it): the server and its URL, once it has started."""
    listening = bind_listening_socket(host, 0)
    server = _quiet_server_class()(config)
    shown = f"[{host}]" if ":" in host else host
    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_serve_until_cancelled, server, listening)
                for _ in range(1000):  # bounded by fail_after
                    if server.started:
                        break
                    await anyio.sleep(0.01)
                yield server, f"http://{shown}:{listening.getsockname()[1]}/"
                tg.cancel_scope.cancel()
    finally:
        listening.close()

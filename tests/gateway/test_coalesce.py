"""The HTTP server's writes of one loop turn leave as one send (gateway/coalesce.py).

On real sockets: a socket pair's asyncio transport, wrapped, and uvicorn serving on loopback.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest

from pegboard.gateway.coalesce import CoalescedWrites
from pegboard.gateway.transports import uvicorn_config
from tests.gateway.test_http_socket import serving

pytestmark = pytest.mark.anyio


@contextmanager
def _pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, peer = socket.socketpair()
    peer.setblocking(False)
    try:
        yield ours, peer
    finally:
        ours.close()
        peer.close()


async def _wrapped(sock: socket.socket) -> CoalescedWrites:
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_connection(asyncio.Protocol, sock=sock)
    return CoalescedWrites(transport, loop)  # type: ignore[arg-type]


def _pending(peer: socket.socket) -> bytes:
    try:
        return peer.recv(65536)
    except BlockingIOError:
        return b""


async def test_writes_of_one_turn_leave_together_at_its_end() -> None:
    with _pair() as (ours, peer):
        transport = await _wrapped(ours)
        transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
        transport.write(bytearray(b'{"ok":true}'))
        assert _pending(peer) == b""  # nothing sent within the turn
        assert transport.get_write_buffer_size() == 30
        await anyio.lowlevel.checkpoint()
        assert _pending(peer) == b'HTTP/1.1 200 OK\r\n\r\n{"ok":true}'
        transport.close()


async def test_a_close_sends_what_is_held_first_and_an_abort_drops_it() -> None:
    with _pair() as (ours, peer):
        transport = await _wrapped(ours)
        transport.write(b"last words")
        transport.close()
        await anyio.sleep(0.01)
        assert _pending(peer) == b"last words"
        assert _pending(peer) == b""  # then the end of the stream
    with _pair() as (ours, peer):
        transport = await _wrapped(ours)
        transport.write(b"never sent")
        transport.abort()
        await anyio.sleep(0.01)
        assert _pending(peer) == b""


async def _head_then_body(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    headers = [(b"content-type", b"text/plain"), (b"content-length", b"2")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"ok"})


async def test_uvicorn_serves_each_connection_through_coalesced_writes() -> None:
    config = uvicorn_config(_head_then_body, log_level="error", lifespan="off")
    async with serving(config) as (server, url), httpx2.AsyncClient() as client:
        for _ in range(2):
            answer = await client.get(url)
            assert (answer.status_code, answer.text) == (200, "ok")
        connections = list(server.server_state.connections)
        assert [type(c.transport) for c in connections] == [CoalescedWrites]


@pytest.mark.parametrize(("level", "made"), [("info", True), ("debug", True), ("warning", False)])
async def test_access_lines_are_made_only_at_levels_that_show_them(level: str, made: bool) -> None:
    config = uvicorn_config(_head_then_body, log_level=level, lifespan="off")
    async with serving(config) as (server, url), httpx2.AsyncClient() as client:
        assert (await client.get(url)).status_code == 200
        connections = list(server.server_state.connections)
        assert [c.access_log for c in connections] == [made]

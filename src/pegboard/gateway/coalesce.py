"""One ``send()`` per response: the writes of one loop turn on an HTTP connection, joined.

uvicorn writes a response's status line and headers when the app starts the response and the
body when the app sends it, each with its own ``send()``. On a connection with TCP_NODELAY
(every accepted one: :func:`~pegboard.gateway.transports.bind_listening_socket`) those are two
TCP segments, so the client wakes twice per response, and on a loaded machine waits for the
scheduler twice. :class:`CoalescedWrites` holds what is written until the end of the current
turn of the event loop, then writes it at once: a JSON reply's head and body (sent in one
step of the request's task) leave as one segment; an event stream's later events still leave
when sent, one turn later at most.

This sits below uvicorn, at the level of asyncio transports and protocols (uvicorn runs only
on asyncio's loop, or uvloop's, which is the same interface), so the loop's ``call_soon`` is
the primitive here, not anyio's.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast


class CoalescedWrites:
    """``transport`` with its writes of one loop turn joined into one (see the module
    docstring); everything else is the transport's own."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []
        # The calls uvicorn makes per request, bound once (no __getattr__ on the hot path).
        self.is_closing = transport.is_closing
        self.get_extra_info = transport.get_extra_info
        self.pause_reading = transport.pause_reading
        self.resume_reading = transport.resume_reading

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._held:
            self._loop.call_soon(self.flush)
        self._held.append(bytes(data))

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.write(chunk)

    def flush(self) -> None:
        """Write what is held now (a no-op when nothing is, or the connection is closing)."""
        held, self._held = self._held, []
        if held and not self._transport.is_closing():
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._held))

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()  # a response written just before a close still goes out, first
        self._transport.close()

    def abort(self) -> None:
        self._held = []
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def coalescing() -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol of choice (httptools when importable, else h11), each
    connection's transport wrapped in :class:`CoalescedWrites`."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class CoalescingProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(CoalescedWrites(cast(asyncio.Transport, transport), self.loop))

    return CoalescingProtocol

"""A stdio server transport without worker threads, with a line-length cap.

The SDK's ``stdio_server`` reads and writes through ``anyio.wrap_file``: every line in and out
costs a round trip to a worker thread, which dominates the latency a proxy adds on a loaded
machine. When stdin and stdout are pipes or sockets (how MCP clients launch servers), this
transport reads and writes their file descriptors directly in non-blocking mode on the event
loop. Like the SDK's, it moves fd 0 to ``/dev/null`` and fd 1 to stderr while serving, so a
stray ``print`` or a child process can never corrupt the JSON-RPC stream, and restores them.
A line longer than :data:`MAX_LINE_BYTES` is dropped (reported to the session as an error)
instead of growing memory without bound. On a terminal it defers to the SDK's transport
(switching a tty to non-blocking mode would leak into the shell).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from pegboard.errors import McpError

MAX_LINE_BYTES = 4 * 1024 * 1024
_CHUNK = 256 * 1024

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception],
    MemoryObjectSendStream[SessionMessage],
]
# Offered every line before it is parsed for the SDK: returns True if it answers the line
# itself (writing its response to the stream it is given), False to pass the line on.
LineTaker = Callable[[bytes, MemoryObjectSendStream[SessionMessage], anyio.abc.TaskGroup], bool]


def _is_pipe(fd: int) -> bool:
    if sys.platform == "win32":  # anyio waits on sockets only there: use the SDK's transport
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def _read_lines(
    fd: int,
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    take: Callable[[bytes], bool] = lambda line: False,
) -> None:
    buffered = b""
    oversized = False
    async with sink:
        while True:
            await anyio.wait_readable(fd)
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                return
            *lines, buffered = (buffered + chunk).split(b"\n")
            for line in lines:
                if oversized:  # the tail of a line already dropped
                    oversized = False
                    continue
                if line.strip() and not take(line):
                    await sink.send(_parse(line))
            if len(buffered) > MAX_LINE_BYTES:
                buffered, oversized = b"", True
                await sink.send(McpError(f"dropped a message over {MAX_LINE_BYTES} bytes"))


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:
        return exc
    return SessionMessage(message)


async def _write_lines(fd: int, source: MemoryObjectReceiveStream[SessionMessage]) -> None:
    async with source:
        async for item in source:
            data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
            view = memoryview(data + b"\n")
            while view:
                try:
                    view = view[os.write(fd, view) :]
                except BlockingIOError:
                    await anyio.wait_writable(fd)


def _divert(fd: int, target: int) -> int:
    """Point ``fd`` at ``target`` and return a private, non-blocking duplicate of the wire."""
    private = os.dup(fd)
    os.set_inheritable(private, False)
    os.dup2(target, fd)
    os.set_blocking(private, False)
    return private


@asynccontextmanager
async def pipe_stdio_server(taker: LineTaker | None = None) -> AsyncIterator[Streams]:
    """Serve MCP on this process's stdin/stdout (see the module docstring); ``taker`` may
    answer some lines itself (pipes only)."""
    if not (_is_pipe(0) and _is_pipe(1)):
        async with stdio_server() as streams:
            yield streams
        return
    devnull = os.open(os.devnull, os.O_RDONLY)
    wire_in = _divert(0, devnull)
    wire_out = _divert(1, 2)
    os.close(devnull)
    in_send, in_receive = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    out_send, out_receive = anyio.create_memory_object_stream[SessionMessage](16)
    reading = anyio.CancelScope()

    try:
        async with anyio.create_task_group() as tg:

            def take(line: bytes) -> bool:
                return taker is not None and taker(line, out_send, tg)

            async def read() -> None:
                with reading:
                    await _read_lines(wire_in, in_send, take)

            tg.start_soon(read)
            tg.start_soon(_write_lines, wire_out, out_receive)
            try:
                yield in_receive, out_send
            finally:
                reading.cancel()
                # Closing the send side lets the writer flush what is queued, then end.
                await out_send.aclose()
                tg.cancel_scope.deadline = anyio.current_time() + 2
    finally:
        os.set_blocking(wire_in, True)
        os.set_blocking(wire_out, True)
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)

"""A stdio server transport without worker threads, with a line-length cap.

The SDK's ``stdio_server`` reads and writes through ``anyio.wrap_file``: every line in and out
costs a round trip to a worker thread, which dominates the latency a proxy adds on a loaded
machine. When stdin and stdout are pipes or sockets (how MCP clients launch servers), this
transport reads and writes their file descriptors directly in non-blocking mode on the event
loop. Like the SDK's, it moves fd 0 to ``/dev/null`` and fd 1 to stderr while serving, so a
stray ``print`` or a child process can never corrupt the JSON-RPC stream, and restores them.
A line longer than :data:`MAX_LINE_BYTES` is dropped (reported to the session as an error)
instead of growing memory without bound.

A terminal (or a file) works too, without a thread: a tty stays in blocking mode (switching it
to non-blocking would leak into the shell) and is read only once the event loop says it is
readable; a regular file never blocks for long. No read ever sits in a worker thread, so a
signal cancels serving at once even while stdin stays open (the SDK's transport, reading in a
thread, would wait for the next line).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from pegboard.errors import McpError
from pegboard.gateway import early
from pegboard.mcp.framing import LineSplitter, encode_message, parse_line, rejection

MAX_LINE_BYTES = 4 * 1024 * 1024
_CHUNK = 256 * 1024

# The writer takes SDK messages, and ready-made lines (answers written without the SDK).
Outgoing = SessionMessage | bytes
Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception],
    MemoryObjectSendStream[Outgoing],
]
# Offered every line before it is parsed for the SDK: returns True if it answers the line
# itself (writing its response to the stream it is given), False to pass the line on.
LineTaker = Callable[[bytes, MemoryObjectSendStream[Outgoing], anyio.abc.TaskGroup], bool]


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _pollable(fd: int) -> bool:
    """Whether the event loop can wait on ``fd`` (pipes, sockets, terminals; not files)."""
    return _is_pipe(fd) or os.isatty(fd)


async def _read_lines(
    fd: int,
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    take: Callable[[bytes], bool] = lambda line: False,
    reply: MemoryObjectSendStream[Outgoing] | None = None,
    handoff: early.Handoff | None = None,
    pollable: bool = True,
) -> None:
    """Lines of ``fd`` (after what ``handoff`` kept) to ``sink``, unless ``take`` answers
    them; a line that is no valid message is answered on ``reply`` (if it has an id)."""
    lines = LineSplitter(MAX_LINE_BYTES)
    pending = handoff.pending if handoff else b""
    eof = handoff.eof if handoff else False
    async with sink:
        while True:
            if pending:
                chunk, pending = pending, b""
            elif eof:
                return
            else:
                if pollable:
                    await anyio.wait_readable(fd)
                else:  # a regular file: reads return at once; let other tasks run between
                    await anyio.lowlevel.checkpoint()
                try:
                    chunk = os.read(fd, _CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    return
            for line in lines.feed(chunk):
                if take(line):
                    continue
                parsed = parse_line(line)
                if isinstance(parsed, Exception) and reply is not None:
                    answer = rejection(line, _problem(parsed))
                    if answer is not None:
                        await reply.send(answer)
                    continue
                await sink.send(parsed)
            if lines.dropped:
                lines.dropped = 0
                await sink.send(McpError(f"dropped a message over {MAX_LINE_BYTES} bytes"))


def _problem(exc: Exception) -> str:
    """One short line: the first validation error (the full text echoes the input)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors(include_url=False, include_input=False)[0]
        where = ".".join(str(p) for p in first["loc"][1:]) or "message"
        return f"{where}: {first['msg']}"
    return str(exc).splitlines()[0]


async def _write_lines(fd: int, source: MemoryObjectReceiveStream[Outgoing]) -> None:
    async with source:
        async for item in source:
            if isinstance(item, bytes):
                data = item
            elif getattr(item.message, "id", None) == early.REPLAY_ID:
                continue  # the SDK's answer to the initialize the early reader answered
            else:
                data = encode_message(item)
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(fd, view) :]
                except BlockingIOError:
                    await anyio.wait_writable(fd)


def _divert(fd: int, target: int) -> tuple[int, bool]:
    """Point ``fd`` at ``target`` and return a private duplicate of the wire, and whether
    it was in blocking mode (pipes and sockets are switched to non-blocking; see above)."""
    private = os.dup(fd)
    os.set_inheritable(private, False)
    os.dup2(target, fd)
    blocking = os.get_blocking(private)
    if _is_pipe(private):
        os.set_blocking(private, False)
    return private, blocking


@asynccontextmanager
async def pipe_stdio_server(
    taker: LineTaker | None = None, handoff: early.Handoff | None = None
) -> AsyncIterator[Streams]:
    """Serve MCP on this process's stdin/stdout (see the module docstring); ``taker`` may
    answer some lines itself. ``handoff``: what the early reader
    (:mod:`pegboard.gateway.early`) kept, read before stdin."""
    if sys.platform == "win32":  # anyio waits on sockets only there: the SDK's transport
        async with stdio_server() as streams:
            yield streams
        return
    devnull = os.open(os.devnull, os.O_RDONLY)
    wire_in, in_blocking = _divert(0, devnull)
    wire_out, out_blocking = _divert(1, 2)
    os.close(devnull)
    pollable = _pollable(wire_in)
    in_send, in_receive = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    out_send, out_receive = anyio.create_memory_object_stream[Outgoing](16)
    reading = anyio.CancelScope()

    try:
        async with anyio.create_task_group() as tg:

            def take(line: bytes) -> bool:
                return taker is not None and taker(line, out_send, tg)

            async def read() -> None:
                with reading:
                    await _read_lines(wire_in, in_send, take, out_send, handoff, pollable)

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
        os.set_blocking(wire_in, in_blocking)
        os.set_blocking(wire_out, out_blocking)
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)

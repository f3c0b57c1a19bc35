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

import asyncio
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Sized
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from pegboard.errors import McpError
from pegboard.gateway import early
from pegboard.mcp.framing import LineSplitter, encode_message, parse_line, rejection
from pegboard.mcp.pipes import LineFeed, PipeSend

logger = logging.getLogger("pegboard.gateway")

MAX_LINE_BYTES = 4 * 1024 * 1024

# The writer takes SDK messages, and ready-made lines (answers written without the SDK).
Outgoing = SessionMessage | bytes
Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception],
    MemoryObjectSendStream[Outgoing],
]


class Replies:
    """The client's end of stdout. The SDK's messages come through its stream (``queue``)
    and the writer task; an answer written without the SDK (:meth:`send`: the fast path's, a
    refused line's) goes out at once when nothing is queued or part-way out before it (the
    writer waits, idle), and else joins the queue behind what is there: the client reads
    everything in the order it was sent, each message whole, and the common answer skips the
    writer task (a stream hop and its checkpoints cost three turns of the event loop)."""

    def __init__(
        self,
        fd: int,
        queue: MemoryObjectSendStream[Outgoing],
        queued: MemoryObjectReceiveStream[Outgoing],
    ) -> None:
        pipe = os.fdopen(fd, "wb", buffering=0, closefd=False)
        self._wire = PipeSend(pipe, threaded=False, set_mode=False)  # set by _divert
        self._queue = queue
        self._queued = queued
        # Whether the writer waits, asked per answer: the stream's own table of waiting
        # receivers (anyio's state, shared by both ends) rather than a statistics() dataclass
        # made each time; should anyio move it, statistics() answers.
        waiting = getattr(getattr(queued, "_state", None), "waiting_receivers", None)
        self._waiting: Sized | None = waiting if isinstance(waiting, dict) else None

    async def send(self, item: Outgoing) -> None:
        """Write ``item`` after everything sent before it (at once when nothing was)."""
        waiting = self._waiting
        if waiting is None:
            idle = self._queued.statistics().tasks_waiting_receive > 0
        else:
            idle = bool(waiting)
        if not idle:
            # The writer has an item (queued, just handed to it, or part-way out): after it.
            await self._queue.send(item)
            return
        data = _encoded(item)
        if data is not None:
            await self._wire.send(data)

    async def write_all(self) -> None:
        """The writer task: the queue's items to the client, in order, until it closes."""
        async with self._queued:
            async for item in self._queued:
                data = _encoded(item)
                if data is not None:
                    await self._wire.send(data)


def _encoded(item: Outgoing) -> bytes | None:
    if isinstance(item, bytes):
        return item
    if getattr(item.message, "id", None) == early.REPLAY_ID:
        return None  # the SDK's answer to the initialize the early reader answered
    return encode_message(item)


AnswerTask = asyncio.Task[None]
"""One line's answering task (:meth:`Answering.start_soon`): ``cancel()`` stops it."""


class Answering:
    """The tasks answering lines a taker took off the reader: plain asyncio tasks (an anyio
    task group's spawn, with the cancel scope it wraps each task in, costs three times as
    much: ~20 us of a call's CPU). When serving ends they have the writer's grace period to
    finish (:meth:`finish`), then are cancelled; a task's exception is logged (a taker's
    task answers its own errors)."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> AnswerTask:
        task = asyncio.get_running_loop().create_task(func(*args))
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("answering a line failed", exc_info=task.exception())

    async def finish(self) -> None:
        """Wait for the running tasks (a cancel of the waiter cancels them)."""
        try:
            while self._tasks:
                await asyncio.wait(set(self._tasks))
        finally:
            for task in list(self._tasks):
                task.cancel()


# Offered every line before it is parsed for the SDK: returns True if it answers the line
# itself (sending its response with the replies it is given, from a task it starts with
# the answering given), False to pass the line on.
LineTaker = Callable[[bytes, Replies, Answering], bool]


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
    reply: Replies | None = None,
    handoff: early.Handoff | None = None,
    pollable: bool = True,
) -> None:
    """Lines of ``fd`` (after what ``handoff`` kept) to ``sink``, unless ``take`` answers
    them (offered each line as soon as it is read: :class:`~pegboard.mcp.pipes.LineFeed`); a
    line that is no valid message is answered on ``reply`` (if it has an id)."""
    feed = LineFeed(fd, LineSplitter(MAX_LINE_BYTES), take, pollable=pollable)
    if handoff is not None:
        feed.feed(handoff.pending)
        if handoff.eof:
            feed.close()
    async with sink:
        try:
            while (line := await feed.next()) is not None:
                if isinstance(line, int):
                    await sink.send(McpError(f"dropped a message over {MAX_LINE_BYTES} bytes"))
                    continue
                parsed = parse_line(line)
                if isinstance(parsed, Exception) and reply is not None:
                    answer = rejection(line, _problem(parsed))
                    if answer is not None:
                        await reply.send(answer)
                    continue
                await sink.send(parsed)
        finally:
            feed.close()


def _problem(exc: Exception) -> str:
    """One short line: the first validation error (the full text echoes the input)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors(include_url=False, include_input=False)[0]
        where = ".".join(str(p) for p in first["loc"][1:]) or "message"
        return f"{where}: {first['msg']}"
    return str(exc).splitlines()[0]


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
    replies = Replies(wire_out, out_send, out_receive)
    reading = anyio.CancelScope()
    answering = Answering()

    try:
        async with anyio.create_task_group() as tg:

            def take(line: bytes) -> bool:
                return taker is not None and taker(line, replies, answering)

            async def read() -> None:
                with reading:
                    await _read_lines(wire_in, in_send, take, replies, handoff, pollable)

            tg.start_soon(read)
            tg.start_soon(replies.write_all)
            try:
                yield in_receive, out_send
            finally:
                reading.cancel()
                # Closing the send side lets the writer flush what is queued, then end.
                await out_send.aclose()
                tg.cancel_scope.deadline = anyio.current_time() + 2
                await answering.finish()
    finally:
        os.set_blocking(wire_in, in_blocking)
        os.set_blocking(wire_out, out_blocking)
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)

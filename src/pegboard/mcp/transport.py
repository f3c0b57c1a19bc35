"""Transports to MCP servers, with the guards the SDK's own stdio client lacks.

The stdio transport is ours rather than ``mcp.stdio_client`` because that reader has no line
cap (a server streaming without newlines grows the client without bound) and sends the
child's stderr to our own stderr. Here: messages over ``max_message_bytes`` close the
connection with a clear reason, stderr is drained into a bounded :class:`StderrLog`, and the
child gets only an allow-listed environment plus what its config sets, so a secret in
pegboard's environment never reaches a server it was not configured for. Shutdown follows the
MCP spec order: close stdin, wait briefly, then SIGTERM/SIGKILL the whole process group.
"""

from __future__ import annotations

import logging
import re
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from pegboard.mcp import direct as direct_requests
from pegboard.mcp.config import McpServerConfig
from pegboard.mcp.pipes import PipeProcess
from pegboard.mcp.spawn import Launch, claim

# The SDK (and our framing over its message types) loads only when a transport opens: the
# catalog builds a connection per server at start-up, and read commands never open one.
if TYPE_CHECKING:
    from mcp.client._transport import TransportStreams
    from mcp.shared.message import SessionMessage

logger = logging.getLogger("pegboard.mcp.transport")

DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
DEFAULT_STDERR_LOG_BYTES = 64 * 1024
STDIN_CLOSE_GRACE = 0.5
TERMINATE_GRACE = 1.0


def stderr_path(directory: Path | None, server_id: str) -> Path | None:
    """The file that keeps ``server_id``'s stderr of its last start (in ``directory``)."""
    if directory is None:
        return None
    return directory / (re.sub(r"[^A-Za-z0-9._-]", "_", server_id) + ".stderr.log")


class StderrLog:
    """The last ``limit`` bytes a server wrote to stderr since its last start (older output
    is dropped), also kept in ``path`` (if given) for ``pegboard servers logs``."""

    def __init__(self, limit: int = DEFAULT_STDERR_LOG_BYTES, path: Path | None = None) -> None:
        self.limit = limit
        self.path = path
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._file_size = 0
        self.dropped = 0

    def start(self) -> None:
        """A new start of the server: forget the previous start's output."""
        self._chunks.clear()
        self._size = self.dropped = 0
        self._save(b"", append=False)

    def _save(self, data: bytes, *, append: bool) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("ab" if append else "wb") as fh:
                fh.write(data)
            self._file_size = self._file_size + len(data) if append else len(data)
        except OSError as exc:  # a log: the server runs on without it
            logger.warning("cannot keep the stderr of an MCP server in %s: %s", self.path, exc)
            self.path = None

    def write(self, data: bytes) -> None:
        self._append(data)
        if self._file_size + len(data) > self.limit:  # keep the file as bounded as memory
            self._save(b"".join(self._chunks), append=False)
        else:
            self._save(data, append=True)

    def _append(self, data: bytes) -> None:
        if len(data) > self.limit:
            self.dropped += len(data) - self.limit
            data = data[-self.limit :]
        self._chunks.append(data)
        self._size += len(data)
        while self._size > self.limit:
            head = self._chunks.popleft()
            excess = self._size - self.limit
            if len(head) > excess:
                self._chunks.appendleft(head[excess:])
                self._size -= excess
                self.dropped += excess
            else:
                self._size -= len(head)
                self.dropped += len(head)

    def text(self) -> str:
        return b"".join(self._chunks).decode("utf-8", errors="replace")


class TransportState:
    """Why a transport closed, when it closed on its own; on stdio, its direct requests."""

    def __init__(self) -> None:
        self.closed = anyio.Event()
        self.reason: str | None = None
        # stdio: the requests pegboard writes itself (pegboard.mcp.direct); None elsewhere
        self.direct: direct_requests.DirectRequests | None = None

    def close(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self.closed.set()


@asynccontextmanager
async def open_transport(
    config: McpServerConfig,
    state: TransportState,
    *,
    stderr_log: StderrLog,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> AsyncIterator[TransportStreams]:
    """The (read, write) stream pair for ``config``, whatever its transport."""
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    if config.transport == "stdio":
        async with _stdio(config, state, stderr_log, max_message_bytes) as streams:
            yield streams
    elif config.transport == "sse":
        assert config.url is not None
        async with sse_client(config.url, headers=config.headers or None) as streams:
            yield streams
    else:
        assert config.url is not None
        async with (
            create_mcp_http_client(headers=config.headers or None) as client,
            streamable_http_client(config.url, http_client=client) as streams,
        ):
            yield streams


def launch_of(config: McpServerConfig) -> Launch:
    """How ``config``'s stdio server is started."""
    assert config.command is not None
    return Launch(config.id, (config.command, *config.args), config.cwd, config.env)


@asynccontextmanager
async def _stdio(
    config: McpServerConfig, state: TransportState, stderr_log: StderrLog, cap: int
) -> AsyncIterator[TransportStreams]:
    from mcp.shared.message import SessionMessage

    from pegboard.mcp.framing import LineSplitter, encode_message

    launch = launch_of(config)
    # A process ``pegboard serve`` started before its imports (pegboard.mcp.spawn), if any.
    process = PipeProcess(claim(launch) or launch.start())
    assert process.stdin is not None
    direct = direct_requests.DirectRequests(process.stdin.send)
    if direct_requests.enabled():
        state.direct = direct  # else nothing is sent through it, and it takes no line
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_stdout() -> None:
        assert process.stdout is not None
        lines = LineSplitter(cap)
        # An answer to a direct request is taken (handed to its call) as soon as it is read.
        feed = process.stdout_lines(lines, direct.take)
        too_large = f"server sent a message larger than {cap} bytes"
        try:
            with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                if feed is not None:
                    while (line := await feed.next()) is not None:
                        if isinstance(line, int):  # dropped: over the cap
                            state.close(too_large)
                            return
                        await read_writer.send(_parse(line))
                        line = b""  # not held while the next one is awaited (a listing: MBs)
                else:
                    async for chunk in process.stdout:
                        for line in lines.feed(chunk):
                            if not direct.take(line):
                                await read_writer.send(_parse(line))
                        if lines.dropped:
                            state.close(too_large)
                            return
            # Say why before the session sees the end, so a failing request can name it.
            state.close(await _exit_reason(process) or "server process exited")
        finally:
            if feed is not None:
                feed.close()
            direct.close()
            await read_writer.aclose()

    async def read_stderr() -> None:
        assert process.stderr is not None
        with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for chunk in process.stderr:
                stderr_log.write(chunk)

    async def write_stdin() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:  # held while the reason is found: later writes wait
                try:
                    async for message in write_reader:
                        await process.stdin.send(encode_message(message))
                except (anyio.BrokenResourceError, OSError):
                    # A server exiting at start closes its stdin first: its exit code says more.
                    state.close(await _exit_reason(process) or "server closed its stdin")
                    raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            state.close("server closed its stdin")
            direct.close()
            await read_writer.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_stdout)
        tg.start_soon(read_stderr)
        tg.start_soon(write_stdin)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await write_stream.aclose()
                await read_stream.aclose()
                await _stop(process)
            tg.cancel_scope.cancel()


def _parse(line: bytes) -> SessionMessage | Exception:
    """A line from the server as a message; an unreadable answer to a request becomes an
    error answer to it (the call fails at once, saying why), other bad lines are ignored."""
    from pegboard.mcp.framing import parse_line, unreadable_answer

    parsed = parse_line(line)
    if isinstance(parsed, Exception):
        if (answer := unreadable_answer(line, parsed)) is not None:
            logger.warning(
                "an MCP server sent an answer that could not be read (%s)", type(parsed).__name__
            )
            return answer
        logger.debug("ignoring a line that is not JSON-RPC from an MCP server: %s", parsed)
    return parsed


async def _exit_reason(process: anyio.abc.Process) -> str | None:
    """``server process exited with code N`` once the process has exited (a short wait)."""
    with anyio.move_on_after(STDIN_CLOSE_GRACE):  # its pipes are closed: the exit is near
        await process.wait()
    code = process.returncode
    return None if code is None else f"server process exited with code {code}"


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin, give the server a moment, then terminate its whole process group."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(STDIN_CLOSE_GRACE):
        await process.wait()
    if process.returncode is None:
        if sys.platform == "win32":  # pragma: no cover
            process.kill()
        else:
            from mcp.os.posix.utilities import terminate_posix_process_tree

            await terminate_posix_process_tree(process, TERMINATE_GRACE)
        with anyio.move_on_after(TERMINATE_GRACE):
            await process.wait()
    await process.aclose()

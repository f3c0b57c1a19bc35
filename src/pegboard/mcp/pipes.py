"""An already running child process (:mod:`pegboard.mcp.spawn`) driven by anyio.

``anyio.open_process`` can only start a process; a stdio server started before the event
loop existed (the early start of ``pegboard serve``) needs the same streams over the pipes
it already has. :class:`PipeProcess` gives both kinds one path: every stdio server is
started by :meth:`Launch.start <pegboard.mcp.spawn.Launch.start>` and driven through this.
The pipes are non-blocking file descriptors awaited with ``anyio.wait_readable`` /
``wait_writable``; the exit is awaited on a pidfd where the platform has one (Linux).
Windows has neither non-blocking pipes nor readiness waits on them: there each read and write
is a blocking call in a worker thread (``threaded``), and the exit is polled.

:class:`LineFeed` reads lines of a non-blocking descriptor the cheap way, for the two readers a
call passes (the answer from a stdio server, the request from the gateway's stdio client):
the descriptor stays registered with the event loop from the first read to the end (anyio's
``wait_readable`` registers and drops it around every wait: two ``epoll_ctl`` calls and a
woken task per message), each line is offered to a ``take`` inside the loop's readiness
callback (a direct answer reaches its waiting call without waking the reader task), and the
lines not taken queue for :meth:`LineFeed.next`, the fd unwatched while that queue is full.
"""

from __future__ import annotations

import os
import subprocess
from collections import deque
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Protocol

import anyio
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

if TYPE_CHECKING:  # imported when a feed first waits: a cache read imports this module
    import asyncio

_CHUNK = 65536
FEED_CHUNK = 256 * 1024  # bytes a readiness callback of a LineFeed reads at most
FEED_QUEUE = 64  # lines a LineFeed queues for its reader before it stops reading the fd
_POLL = 0.05  # s between exit checks where there is no pidfd
THREADED = os.name == "nt"  # pipes read and written in worker threads (see the docstring)


class Splitter(Protocol):
    """What :class:`LineFeed` cuts a stream with (:class:`pegboard.mcp.framing.LineSplitter`)."""

    dropped: int

    def feed(self, chunk: bytes) -> list[bytes]: ...


class LineFeed:
    """The lines of non-blocking ``fd`` cut by ``lines``, read in the event loop's readiness
    callback (see the module docstring). ``take`` is offered each line there first (True:
    taken, e.g. an answer handed to its waiter); the others come from :meth:`next` in order,
    an ``int`` in their place when lines over the cap were dropped (how many). What ``take``
    raises ends the feed and is raised by :meth:`next`. Needs the asyncio event loop, unless
    ``pollable`` is False: a regular file, which the loop cannot watch and a read never waits
    on, is read by :meth:`next` itself."""

    def __init__(
        self,
        fd: int,
        lines: Splitter,
        take: Callable[[bytes], bool] | None = None,
        *,
        pollable: bool = True,
    ) -> None:
        self._fd = fd
        self._pollable = pollable  # False: a regular file, read at once (never watched)
        self._lines = lines
        self._take = take
        self._queue: deque[bytes | int] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._watching = False
        self._ended = False
        self._error: BaseException | None = None

    def feed(self, chunk: bytes) -> None:
        """Cut ``chunk`` into lines as if read from the fd (what an earlier reader kept)."""
        for line in self._lines.feed(chunk):
            if self._take is None or not self._take(line):
                self._queue.append(line)
        if self._lines.dropped:
            self._queue.append(self._lines.dropped)
            self._lines.dropped = 0

    async def next(self) -> bytes | int | None:
        """The next line not taken (an ``int``: so many lines dropped here), None at the
        end of the stream; :class:`anyio.BrokenResourceError` if reading failed."""
        while not self._queue:
            if self._ended:
                if self._error is not None:
                    if isinstance(self._error, OSError):
                        raise anyio.BrokenResourceError from self._error
                    raise self._error
                return None
            if not self._pollable:  # reads return at once: let other tasks run between
                await anyio.lowlevel.checkpoint()
                self._readable()
                continue
            if self._loop is None:
                import asyncio  # the event loop's own: imported once a feed waits on it

                self._loop = asyncio.get_running_loop()
            loop = self._loop
            self._watch(True)
            self._waiter = loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._queue.popleft()

    def close(self) -> None:
        """Stop reading (before the fd is closed); a waiting :meth:`next` returns None."""
        self._watch(False)
        self._ended = True
        self._wake()

    def _watch(self, on: bool) -> None:
        if on == self._watching or self._loop is None or (on and self._ended):
            return
        if on:
            self._loop.add_reader(self._fd, self._readable)
        else:
            self._loop.remove_reader(self._fd)
        self._watching = on

    def _readable(self) -> None:
        try:
            chunk = os.read(self._fd, FEED_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._error, chunk = exc, b""
        try:
            if chunk:
                self.feed(chunk)
        except Exception as exc:  # take failed: the reader task raises it
            self._error, chunk = exc, b""
        if not chunk:
            self._ended = True
            self._watch(False)
        elif len(self._queue) >= FEED_QUEUE:  # the reader is behind: read on once it caught up
            self._watch(False)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done() and (self._queue or self._ended):
            waiter.set_result(None)


class _PipeEnd:
    """One end of a child's pipe: non-blocking, or (``threaded``) blocking in its own thread."""

    def __init__(self, pipe: IO[bytes], threaded: bool, *, set_mode: bool = True) -> None:
        """``set_mode=False``: leave the descriptor's blocking mode as it is (a terminal on
        ``pegboard serve``'s stdout stays blocking; switching it would leak into the shell)."""
        self._pipe = pipe
        self._fd = pipe.fileno()
        self._threaded = threaded
        # a thread of its own: blocked readers of many servers must not use up anyio's pool
        self._limiter = anyio.CapacityLimiter(1) if threaded else None
        if not threaded and set_mode:
            os.set_blocking(self._fd, False)

    async def aclose(self) -> None:
        if not self._pipe.closed:
            if not self._threaded:
                anyio.notify_closing(self._fd)
            self._pipe.close()


class _Receive(_PipeEnd, ByteReceiveStream):
    def __init__(self, pipe: IO[bytes], threaded: bool) -> None:
        super().__init__(pipe, threaded)
        self._feed: LineFeed | None = None

    def line_feed(self, lines: Splitter, take: Callable[[bytes], bool]) -> LineFeed | None:
        """The lines of this pipe as a :class:`LineFeed` (None where pipes are threaded: read
        chunks with :meth:`receive` then); closed with the pipe."""
        if self._threaded:
            return None
        self._feed = LineFeed(self._fd, lines, take)
        return self._feed

    async def aclose(self) -> None:
        if self._feed is not None:
            self._feed.close()
        await super().aclose()

    async def receive(self, max_bytes: int = _CHUNK) -> bytes:
        if self._threaded:
            return await self._receive_in_thread(max_bytes)
        while True:
            if self._pipe.closed:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    async def _receive_in_thread(self, max_bytes: int) -> bytes:
        if self._pipe.closed:
            raise anyio.ClosedResourceError
        try:  # a cancelled read is left to end with the child's output (EOF at its exit)
            data = await anyio.to_thread.run_sync(
                os.read, self._fd, max_bytes, abandon_on_cancel=True, limiter=self._limiter
            )
        except OSError as exc:
            if self._pipe.closed:
                raise anyio.ClosedResourceError from exc
            raise anyio.BrokenResourceError from exc
        if not data:
            raise anyio.EndOfStream
        return data


class PipeSend(_PipeEnd, ByteSendStream):
    """The writing end of a pipe: a child's stdin, or ``pegboard serve``'s stdout to its client
    (:mod:`pegboard.gateway.stdio`). Several tasks may send at once (the SDK's writer, and the
    requests or answers pegboard writes itself, :mod:`pegboard.mcp.direct`,
    :mod:`pegboard.gateway.fastpath`): each item goes out whole, never interleaved with
    another, in the order sent; an item that fits in the pipe is written without a wait."""

    def __init__(self, pipe: IO[bytes], threaded: bool, *, set_mode: bool = True) -> None:
        super().__init__(pipe, threaded, set_mode=set_mode)
        self._turn = anyio.Lock()  # held by a sender whose item is part-way out

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        if self._turn.locked():  # another item is part-way out: wait for its end
            await self._turn.acquire()
        elif self._threaded:
            self._turn.acquire_nowait()
        else:
            view = self._write_some(view)
            if not view:
                return
            self._turn.acquire_nowait()  # no await since the check: the turn is ours
        try:
            if self._threaded:
                await self._write_in_thread(view)
                return
            view = self._write_some(view)
            while view:
                await anyio.wait_writable(self._fd)
                view = self._write_some(view)
        finally:
            self._turn.release()

    def _write_some(self, view: memoryview) -> memoryview:
        """Write what the pipe takes now; the rest (empty when all went out)."""
        while view:
            if self._pipe.closed:
                raise anyio.ClosedResourceError
            try:
                view = view[os.write(self._fd, view) :]
            except BlockingIOError:
                return view
            except OSError as exc:  # BrokenPipeError: the child closed its stdin
                raise anyio.BrokenResourceError from exc
        return view

    async def _write_in_thread(self, view: memoryview) -> None:
        if self._pipe.closed:
            raise anyio.ClosedResourceError
        try:
            await anyio.to_thread.run_sync(self._write_all, view, limiter=self._limiter)
        except OSError as exc:  # BrokenPipeError: the child closed its stdin
            raise anyio.BrokenResourceError from exc

    def _write_all(self, view: memoryview) -> None:
        while view:
            view = view[os.write(self._fd, view) :]


class PipeProcess(Process):
    """A :class:`subprocess.Popen` with pipes, as the async process the transport drives."""

    def __init__(self, popen: subprocess.Popen[bytes], threaded: bool | None = None) -> None:
        threaded = THREADED if threaded is None else threaded
        assert popen.stdin is not None
        assert popen.stdout is not None
        assert popen.stderr is not None
        self._popen = popen
        self._stdin = PipeSend(popen.stdin, threaded)
        self._stdout = _Receive(popen.stdout, threaded)
        self._stderr = _Receive(popen.stderr, threaded)
        self._pidfd: int | None = None
        self._waiting = False
        if hasattr(os, "pidfd_open"):
            try:
                self._pidfd = os.pidfd_open(popen.pid)
            except OSError:  # an old kernel, or already reaped
                self._pidfd = None

    @property
    def stdin(self) -> ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        return self._stdout

    def stdout_lines(self, lines: Splitter, take: Callable[[bytes], bool]) -> LineFeed | None:
        """The child's stdout as a :class:`LineFeed` (None with threaded pipes)."""
        return self._stdout.line_feed(lines, take)

    @property
    def stderr(self) -> ByteReceiveStream:
        return self._stderr

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.poll()

    def terminate(self) -> None:
        self._popen.terminate()

    def kill(self) -> None:
        self._popen.kill()

    def send_signal(self, signal: int) -> None:
        self._popen.send_signal(signal)

    async def wait(self) -> int:
        # One task waits on the pidfd (a second waiter on one fd is an error in anyio); any
        # other waiter at the same time (the stdout reader and the stop) polls.
        while (code := self._popen.poll()) is None:
            if self._pidfd is not None and not self._waiting:
                self._waiting = True
                try:
                    await anyio.wait_readable(self._pidfd)
                finally:
                    self._waiting = False
            else:
                await anyio.sleep(_POLL)
        return code

    async def aclose(self) -> None:
        """Close the pipes and reap the process (killed if it outlives the cancel)."""
        for stream in (self._stdin, self._stdout, self._stderr):
            await stream.aclose()
        try:
            await self.wait()
        finally:
            if self._popen.poll() is None:
                self._popen.kill()
                self._popen.wait()
            if self._pidfd is not None:
                anyio.notify_closing(self._pidfd)
                os.close(self._pidfd)
                self._pidfd = None

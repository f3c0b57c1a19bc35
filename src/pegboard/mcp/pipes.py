"""An already running child process (:mod:`pegboard.mcp.spawn`) driven by anyio.

``anyio.open_process`` can only start a process; a stdio server started before the event
loop existed (the early start of ``pegboard serve``) needs the same streams over the pipes
it already has. :class:`PipeProcess` gives both kinds one path: every stdio server is
started by :meth:`Launch.start <pegboard.mcp.spawn.Launch.start>` and driven through this.
The pipes are non-blocking file descriptors awaited with ``anyio.wait_readable`` /
``wait_writable``; the exit is awaited on a pidfd where the platform has one (Linux).
Windows has neither non-blocking pipes nor readiness waits on them: there each read and write
is a blocking call in a worker thread (``threaded``), and the exit is polled.
"""

from __future__ import annotations

import os
import subprocess
from typing import IO

import anyio
import anyio.to_thread
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

_CHUNK = 65536
_POLL = 0.05  # s between exit checks where there is no pidfd
THREADED = os.name == "nt"  # pipes read and written in worker threads (see the docstring)


class _PipeEnd:
    """One end of a child's pipe: non-blocking, or (``threaded``) blocking in its own thread."""

    def __init__(self, pipe: IO[bytes], threaded: bool) -> None:
        self._pipe = pipe
        self._fd = pipe.fileno()
        self._threaded = threaded
        # a thread of its own: blocked readers of many servers must not use up anyio's pool
        self._limiter = anyio.CapacityLimiter(1) if threaded else None
        if not threaded:
            os.set_blocking(self._fd, False)

    async def aclose(self) -> None:
        if not self._pipe.closed:
            if not self._threaded:
                anyio.notify_closing(self._fd)
            self._pipe.close()


class _Receive(_PipeEnd, ByteReceiveStream):
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


class _Send(_PipeEnd, ByteSendStream):
    """A child's stdin. Several tasks may send at once (the SDK's writer, and the requests
    pegboard writes itself, :mod:`pegboard.mcp.direct`): each item goes out whole, never
    interleaved with another; an item that fits in the pipe is written without a wait."""

    def __init__(self, pipe: IO[bytes], threaded: bool) -> None:
        super().__init__(pipe, threaded)
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
        self._stdin = _Send(popen.stdin, threaded)
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

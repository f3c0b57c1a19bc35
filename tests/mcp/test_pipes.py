"""A running child driven through :class:`PipeProcess`: pipes both ways, its exit awaited."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from pegboard.mcp.framing import LineSplitter
from pegboard.mcp.pipes import FEED_QUEUE, LineFeed, PipeProcess

pytestmark = pytest.mark.anyio

ECHO_UNTIL_EOF = "import sys\nfor line in sys.stdin: print(line.strip().upper(), flush=True)"


def _child(threaded: bool = False) -> PipeProcess:
    popen = subprocess.Popen(
        [sys.executable, "-c", ECHO_UNTIL_EOF],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    return PipeProcess(popen, threaded=threaded)


# threaded: the Windows path (blocking reads and writes in worker threads), run here too
@pytest.mark.parametrize("threaded", [False, True], ids=["nonblocking", "threaded"])
async def test_a_line_goes_in_and_its_answer_comes_out_then_the_exit_is_seen(
    threaded: bool,
) -> None:
    process = _child(threaded)
    with anyio.fail_after(20):
        await process.stdin.send(b"hello\n")
        answer = b""
        while not answer.endswith(b"\n"):
            answer += await process.stdout.receive()
        assert answer == b"HELLO\n"
        await process.stdin.aclose()
        assert await process.wait() == 0
    await process.aclose()


async def test_two_tasks_may_wait_for_the_exit_at_once() -> None:
    process = _child()
    codes: list[int] = []

    async def wait() -> None:
        codes.append(await process.wait())

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()  # both waiting
            await process.stdin.aclose()
    assert codes == [0, 0]
    await process.aclose()


async def test_the_threaded_path_carries_a_large_message_both_ways_and_sees_eof() -> None:
    process = _child(threaded=True)
    assert os.get_blocking(process._popen.stdout.fileno())  # as on Windows: blocking pipes
    line = b"x" * 300_000 + b"\n"  # more than a pipe's buffer: the write blocks in its thread
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(process.stdin.send, line)
            answer = b""
            while not answer.endswith(b"\n"):
                answer += await process.stdout.receive()
        assert answer == line.upper()
        await process.stdin.aclose()
        with pytest.raises(anyio.EndOfStream):
            await process.stdout.receive()
        assert await process.wait() == 0
    await process.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await process.stdout.receive()


@pytest.mark.parametrize("threaded", [False, True], ids=["nonblocking", "threaded"])
async def test_items_sent_at_once_by_several_tasks_arrive_whole_and_unmixed(
    threaded: bool,
) -> None:
    # Each item is far over a pipe's 64 KiB: its write is cut short and waits for room, and
    # meanwhile the other tasks must not write into the middle of it.
    process = _child(threaded)
    items = {letter: letter.encode() * (1 << 20) + b"\n" for letter in "abcd"}
    received = b""

    async def read_all() -> None:
        nonlocal received
        while received.count(b"\n") < len(items):
            received += await process.stdout.receive()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_all)
            for item in items.values():
                tg.start_soon(process.stdin.send, item)
        await process.stdin.aclose()
        await process.wait()
    lines = sorted(received.split(b"\n")[:-1])
    assert lines == [letter.upper().encode() * (1 << 20) for letter in "abcd"]
    await process.aclose()


# -- LineFeed: the lines of a pipe, offered to a taker as they are read ----------------------


def _pending_bytes(fd: int) -> int:
    """Bytes written to the pipe and not read yet (the kernel's count)."""
    import array
    import fcntl
    import termios

    count = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, count)
    return count[0]


@contextmanager
def _pipe() -> Iterator[tuple[int, int]]:
    """A pipe with a non-blocking read end; both ends closed after (the write end may be)."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    try:
        yield read_fd, write_fd
    finally:
        os.close(read_fd)
        with contextlib.suppress(OSError):
            os.close(write_fd)


async def test_a_line_feed_offers_each_line_to_its_taker_and_queues_the_rest_in_order() -> None:
    taken: list[bytes] = []

    def take(line: bytes) -> bool:
        if line.startswith(b"T"):
            taken.append(line)
            return True
        return False

    with _pipe() as (read_fd, write_fd), anyio.fail_after(20):
        feed = LineFeed(read_fd, LineSplitter(max_bytes=100), take)
        os.write(write_fd, b"T1\nS1\n\nT2\nS")
        assert await feed.next() == b"S1"
        assert taken == [b"T1", b"T2"]  # the whole chunk was cut when it was read
        os.write(write_fd, b"2\n" + b"x" * 150 + b"\nS3\n")
        assert await feed.next() == b"S2"
        assert await feed.next() == b"S3"
        assert await feed.next() == 1  # one line over the cap dropped in that chunk
        os.close(write_fd)
        assert await feed.next() is None  # the end of the stream
        assert await feed.next() is None


async def test_a_full_queue_leaves_the_pipe_unread_until_the_reader_catches_up() -> None:
    with _pipe() as (read_fd, write_fd), anyio.fail_after(20):
        feed = LineFeed(read_fd, LineSplitter(max_bytes=100))
        os.write(write_fd, b"".join(b"%d\n" % i for i in range(FEED_QUEUE + 5)))
        assert await feed.next() == b"0"  # one read took all those lines
        os.write(write_fd, b"later\n")
        for _ in range(3):  # loop turns in which a watched pipe would be read
            await anyio.sleep(0.01)
        assert _pending_bytes(read_fd) == len(b"later\n")  # the queue is full: unread
        for i in range(1, FEED_QUEUE + 5):
            assert await feed.next() == b"%d" % i
        assert await feed.next() == b"later"  # caught up: read again
        feed.close()


async def test_what_the_taker_raises_ends_the_feed_and_reaches_its_reader() -> None:
    def take(line: bytes) -> bool:
        raise ValueError(f"cannot take {line!r}")

    with _pipe() as (read_fd, write_fd), anyio.fail_after(20):
        feed = LineFeed(read_fd, LineSplitter(max_bytes=100), take)
        os.write(write_fd, b"boom\n")
        with pytest.raises(ValueError, match="cannot take b'boom'"):
            await feed.next()


async def test_closing_a_line_feed_ends_a_waiting_reader() -> None:
    got: list[bytes | int | None] = []
    with _pipe() as (read_fd, _), anyio.fail_after(20):
        feed = LineFeed(read_fd, LineSplitter(max_bytes=100))

        async def read() -> None:
            got.append(await feed.next())

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await anyio.sleep(0.05)  # the reader waits on the pipe
            feed.close()
    assert got == [None]


async def test_a_line_feed_reads_a_regular_file_without_watching_it(tmp_path: Path) -> None:
    path = tmp_path / "lines"
    path.write_bytes(b"one\ntwo\nthree")  # the last line unterminated: not a line yet
    fd = os.open(path, os.O_RDONLY)
    feed = LineFeed(fd, LineSplitter(max_bytes=100), pollable=False)
    try:
        with anyio.fail_after(20):
            lines = [await feed.next(), await feed.next(), await feed.next()]
        assert lines == [b"one", b"two", None]
    finally:
        os.close(fd)

import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import pytest
from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from pegboard.errors import McpError
from pegboard.gateway.stdio import MAX_LINE_BYTES, Answering, Outgoing, Replies, _read_lines
from pegboard.mcp.framing import LineSplitter

pytestmark = pytest.mark.anyio

PING = b'{"jsonrpc": "2.0", "id": 7, "method": "ping"}\n'


async def _read_all(payload: bytes) -> list[SessionMessage | Exception]:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](100)

    def feed() -> None:
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(payload)

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_read_lines, read_fd, send)
                await anyio.to_thread.run_sync(feed)
            return [item async for item in receive]
    finally:
        os.close(read_fd)


async def test_lines_become_session_messages_and_garbage_becomes_an_error_item() -> None:
    items = await _read_all(PING + b"not json\n" + PING[:20] + PING[20:])

    assert [type(i).__name__ for i in items] == [
        "SessionMessage",
        "ValidationError",
        "SessionMessage",
    ]


async def test_a_line_over_the_cap_is_dropped_and_reading_goes_on() -> None:
    items = await _read_all(b"x" * (MAX_LINE_BYTES + 300_000) + b"tail\n" + PING)

    assert [type(i) for i in items] == [McpError, SessionMessage]
    assert str(items[0]) == f"dropped a message over {MAX_LINE_BYTES} bytes"


def test_a_whole_line_over_the_cap_in_one_chunk_is_dropped_too() -> None:
    lines = LineSplitter(max_bytes=8)
    assert lines.feed(b"0123456789\nshort\n") == [b"short"]
    assert lines.dropped == 1


async def _until(condition: Callable[[], bool]) -> None:
    """Let the loop run until ``condition`` holds (the caller bounds the wait)."""
    while not condition():  # noqa: ASYNC110 - a stream statistic: no event to wait on
        await anyio.sleep(0.001)


async def _drain(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        await anyio.wait_readable(fd)
        data += os.read(fd, 1 << 20)
    return data


@asynccontextmanager
async def _writing() -> AsyncIterator[tuple[Replies, MemoryObjectSendStream[Outgoing], int]]:
    """Replies on a fresh pipe, its writer task running and idle; the read end to check."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    queue, queued = anyio.create_memory_object_stream[Outgoing](16)
    replies = Replies(write_fd, queue, queued)
    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(replies.write_all)
                await _until(lambda: queued.statistics().tasks_waiting_receive == 1)
                yield replies, queue, read_fd
                queue.close()
    finally:
        os.close(read_fd)
        os.close(write_fd)


BIG = b"Z" * 500_000 + b"\n"  # far over a pipe's buffer: part-way out until drained


async def test_an_answer_written_directly_keeps_its_place_behind_queued_messages() -> None:
    """A fast answer (``Replies.send``) goes out at once only when the writer waits idle:
    sent while the writer is part-way through a big message with another one queued behind
    it, it comes after both, and every message arrives whole. (Waits on conditions, not
    ``wait_all_tasks_blocked``: its 0.1 s re-check beside the blocked-loop detector's 50 ms
    heartbeat made an earlier version of this test retry for seconds on a loaded machine.)"""
    async with _writing() as (replies, queue, read_fd):
        stats = replies._queued.statistics
        await replies.send(b"first\n")  # written directly
        assert os.read(read_fd, 100) == b"first\n"
        await queue.send(BIG)
        # the writer took it and waits for room (nobody reads the pipe yet)
        await _until(lambda: stats().tasks_waiting_receive == 0)
        await anyio.sleep(0.01)
        await queue.send(b"A\n")  # queued behind the big one
        await replies.send(b"B\n")  # the writer is busy: B queues behind A
        assert stats().current_buffer_used == 2
        assert await _drain(read_fd, len(BIG) + 4) == BIG + b"A\nB\n"


async def test_a_direct_answer_part_way_out_goes_out_whole_before_what_the_sdk_sends_next() -> None:
    """A direct write larger than the pipe holds the wire until it is out: the SDK's next
    message, taken by the writer meanwhile, follows it, not inside it."""
    async with _writing() as (replies, queue, read_fd), anyio.create_task_group() as tg:
        tg.start_soon(replies.send, BIG)  # directly: the writer idles
        await anyio.sleep(0.01)  # part-way out: the pipe is full
        await queue.send(b"sdk\n")  # the writer takes it and waits for the wire
        assert await _drain(read_fd, len(BIG) + 4) == BIG + b"sdk\n"


async def test_answering_waits_for_its_tasks_then_cancels_what_outlives_the_grace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The fast path's tasks are plain asyncio tasks outside the transport's task group:
    ``finish`` is what holds serving's end until they are done, and cancels the ones still
    running when its waiter is cancelled (the grace period's deadline)."""
    seen: list[str] = []

    async def quick() -> None:
        await anyio.sleep(0.05)
        seen.append("quick done")

    async def stuck() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            seen.append("stuck ended")

    async def broken() -> None:
        raise RuntimeError("no such thing")

    answering = Answering()
    with anyio.fail_after(10):
        answering.start_soon(quick)
        answering.start_soon(broken)
        await answering.finish()
        assert seen == ["quick done"]
        answering.start_soon(stuck)
        with anyio.move_on_after(0.05):
            await answering.finish()
        await anyio.sleep(0.01)  # the cancelled task's turn

    assert seen == ["quick done", "stuck ended"]
    failed = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [r.getMessage() for r in failed] == ["answering a line failed"]
    assert "no such thing" in str(failed[0].exc_info[1] if failed[0].exc_info else "")

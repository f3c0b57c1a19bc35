import os

import anyio
import pytest
from mcp.shared.message import SessionMessage

from pegboard.errors import McpError
from pegboard.gateway.stdio import MAX_LINE_BYTES, Outgoing, Replies, _read_lines
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


async def _drain(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        await anyio.wait_readable(fd)
        data += os.read(fd, 1 << 20)
    return data


async def test_an_answer_written_directly_keeps_its_place_behind_queued_messages() -> None:
    """A fast answer (``Replies.send``) goes out at once only when the writer waits idle:
    sent while the writer is part-way through a big message with another one queued behind
    it, it comes after both, and every message arrives whole."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    queue, queued = anyio.create_memory_object_stream[Outgoing](16)
    replies = Replies(write_fd, queue, queued)
    big = b"Z" * 500_000 + b"\n"  # far over a pipe's buffer: part-way out until drained
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(replies.write_all)
                await anyio.wait_all_tasks_blocked()
                await replies.send(b"first\n")  # the writer waits: written directly
                assert os.read(read_fd, 100) == b"first\n"
                await queue.send(big)
                await anyio.wait_all_tasks_blocked()  # the writer waits for room
                await queue.send(b"A\n")  # queued behind the big one
                tg.start_soon(replies.send, b"B\n")
                await anyio.wait_all_tasks_blocked()
                data = await _drain(read_fd, len(big) + 4)
                queue.close()
        assert data == big + b"A\nB\n"
    finally:
        os.close(read_fd)
        os.close(write_fd)

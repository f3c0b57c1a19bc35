import os

import anyio
import pytest
from mcp.shared.message import SessionMessage

from pegboard.errors import McpError
from pegboard.gateway.stdio import MAX_LINE_BYTES, _read_lines
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

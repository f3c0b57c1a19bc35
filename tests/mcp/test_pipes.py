"""A running child driven through :class:`PipeProcess`: pipes both ways, its exit awaited."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import pytest

from pegboard.mcp.pipes import PipeProcess

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

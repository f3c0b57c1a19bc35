"""A running child driven through :class:`PipeProcess`: pipes both ways, its exit awaited."""

from __future__ import annotations

import subprocess
import sys

import anyio
import pytest

from pegboard.mcp.pipes import PipeProcess

pytestmark = pytest.mark.anyio

ECHO_UNTIL_EOF = "import sys\nfor line in sys.stdin: print(line.strip().upper(), flush=True)"


def _child() -> PipeProcess:
    popen = subprocess.Popen(
        [sys.executable, "-c", ECHO_UNTIL_EOF],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    return PipeProcess(popen)


async def test_a_line_goes_in_and_its_answer_comes_out_then_the_exit_is_seen() -> None:
    process = _child()
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

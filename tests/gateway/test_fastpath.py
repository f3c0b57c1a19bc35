"""The ``tools/call`` fast path of ``pegboard serve`` over stdio, seen on the raw wire."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from tests.gateway.harness import (
    PEGBOARD,
    STARTUP_BOUND,
    Lines,
    gateway_env,
    run_cli,
    sdk_server,
    victim_server,
    write_config,
)

pytestmark = pytest.mark.anyio


async def test_a_plain_call_and_one_with_meta_get_the_same_answer(tmp_path: Path) -> None:
    write_config(tmp_path, {"servers": {"toolbox": sdk_server()}})
    await run_cli(tmp_path, "servers", "refresh")
    plain = {"name": "mcp__toolbox__echo", "arguments": {"text": "hi"}}
    with_meta = {**plain, "_meta": {"progressToken": "p"}}  # not eligible: the SDK answers
    bad = {"name": "mcp__toolbox__echo", "arguments": {"text": 5}}

    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(
            [PEGBOARD, "serve", "--no-defer"], env=gateway_env(tmp_path)
        ) as process:
            wire = Lines(process)
            await wire.start()
            answers = []
            for request_id, params in ((3, plain), (4, with_meta), (5, bad)):
                await wire.send({"id": request_id, "method": "tools/call", "params": params})
                answers.append(await wire.answer(request_id))
            await wire.send({"id": 6, "method": "tools/call", "params": {**bad, "_meta": {}}})
            slow_bad = await wire.answer(6)

    fast, slow, fast_bad = answers
    assert fast == {**slow, "id": 3}
    assert fast["result"]["content"] == [{"type": "text", "text": "hi"}]
    assert fast_bad["result"]["isError"] is True
    assert fast_bad["result"] == slow_bad["result"]


async def test_a_cancelled_call_gets_no_answer_and_odd_lines_get_an_error_not_a_stop(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, {"servers": {"victim": victim_server()}})
    await run_cli(tmp_path, "servers", "refresh")
    fifo = tmp_path / "started.fifo"
    os.mkfifo(fifo)

    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(
            [PEGBOARD, "serve", "--no-defer"], env=gateway_env(tmp_path)
        ) as process:
            wire = Lines(process)
            await wire.start()
            block = {"name": "mcp__victim__block", "arguments": {"fifo": str(fifo)}}
            await wire.send({"id": 3, "method": "tools/call", "params": block})
            await anyio.to_thread.run_sync(fifo.read_text)  # the call reached the upstream
            odd = {"requestId": [3], "reason": "an id that cannot be one"}
            await wire.send({"method": "notifications/cancelled", "params": odd})
            assert process.stdin is not None
            await process.stdin.send(b'{"method": "tools/call", "x": ' + b"[" * 100_000 + b"\n")
            cancel = {"requestId": 3, "reason": "user stopped it"}
            await wire.send({"method": "notifications/cancelled", "params": cancel})
            pid = {"name": "mcp__victim__pid", "arguments": {}}
            await wire.send({"id": 4, "method": "tools/call", "params": pid})
            after = await wire.answer(4)
            await wire.send({"id": 5, "method": "ping"})
            await wire.answer(5)

    assert int(after["result"]["content"][0]["text"]) > 0
    # The line nested too deeply to parse gets an error (id null: none could be read).
    assert [a["id"] for a in wire.answers] == [1, 2, None, 4, 5]
    assert wire.answers[2]["error"]["code"] == -32600

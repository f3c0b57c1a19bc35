"""The common ``tools/call`` read once and written once (plain results without the SDK's
models) answers byte for byte what the full path answers, on real upstream servers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.gateway.harness import (
    PEGBOARD,
    STARTUP_BOUND,
    Lines,
    gateway_env,
    run_cli,
    scripted_server,
    sdk_server,
    write_config,
)

pytestmark = pytest.mark.anyio

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("mcp__toolbox__echo", {"text": "hi ünïcode \u2603"}),  # text + structured, SDK key order
    ("mcp__toolbox__add", {"a": 2, "b": 3}),  # structured int against an output schema
    ("mcp__toolbox__media", {}),  # image, audio, resource: the SDK's models read it
    ("mcp__toolbox__fail", {"reason": "no"}),  # isError
    ("mcp__toolbox__echo", {"text": 5}),  # refused: invalid arguments
    ("mcp__raw__plain", {"x": [1, {"y": None}]}),  # text only, "type" first, no isError
    ("mcp__raw__typed", {"n": 7}),  # structured content matching the output schema
    ("mcp__raw__typed", {"n": "seven"}),  # structured content the output schema refuses
    ("mcp__raw__nothing_here", {}),  # unknown tool
]


async def _answers(tmp_path: Path, env: dict[str, str]) -> list[bytes]:
    """Each call's answer line, as written, after the handshake (ids 10, 11, ...)."""
    lines: list[bytes] = []
    async with await anyio.open_process([PEGBOARD, "serve", "--no-defer"], env=env) as process:
        wire = Lines(process)
        await wire.start()
        for index, (name, arguments) in enumerate(CALLS):
            params = {"name": name, "arguments": arguments}
            await wire.send({"id": 10 + index, "method": "tools/call", "params": params})
            lines.append(await wire.answer_line(10 + index))
        assert process.stdin is not None
        await process.stdin.aclose()
    return lines


async def test_a_call_answers_the_same_bytes_read_once_as_through_the_full_path(
    tmp_path: Path,
) -> None:
    servers = {
        "toolbox": sdk_server(),
        "raw": scripted_server("--names", "plain", "--mode", "typed"),
    }
    write_config(tmp_path, {"servers": servers})
    await run_cli(tmp_path, "servers", "refresh")
    full = gateway_env(tmp_path) | {"PEGBOARD_NO_FAST_CALLS": "1"}  # the SDK's both ways

    with anyio.fail_after(2 * STARTUP_BOUND):
        read_once = await _answers(tmp_path, gateway_env(tmp_path))
        through_sdk = await _answers(tmp_path, full)

    assert read_once == through_sdk
    results = [json.loads(line)["result"] for line in read_once]
    assert results[0] == {
        "content": [{"text": "hi ünïcode \u2603", "type": "text"}],
        "isError": False,
        "structuredContent": {"result": "hi ünïcode \u2603"},
    }
    assert "ünïcode \u2603".encode() in read_once[0]  # not \u-escaped, as the SDK writes it
    assert results[1]["structuredContent"] == {"result": 5}
    assert [block["type"] for block in results[2]["content"]] == [
        "text",
        "image",
        "audio",
        "resource",
    ]
    assert results[3]["isError"] is True
    assert results[4]["isError"] is True
    assert "text" in results[4]["content"][0]["text"]
    assert results[5] == {
        "content": [{"text": 'plain:{"x": [1, {"y": null}]}', "type": "text"}],
        "isError": False,
    }
    assert results[6]["structuredContent"] == {"n": 7}
    assert results[7]["isError"] is True
    assert "invalid" in results[7]["content"][0]["text"]
    assert results[8]["isError"] is True

"""The common ``tools/call`` read once and written once (plain results without the SDK's
models) answers byte for byte what the full path answers, on real upstream servers: on stdio,
and on streamable HTTP, where the fast path (:mod:`pegboard.gateway.http_fast`) answers an
established session's call without the SDK's runner."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.gateway.harness import (
    INIT,
    PEGBOARD,
    STARTUP_BOUND,
    Lines,
    gateway_env,
    run_cli,
    scripted_server,
    sdk_server,
    serving_url,
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


HTTP_CALLS = [*CALLS, ("mcp__gated__add", {"a": 1, "b": 2})]  # gated: refused, cannot be asked
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _message_bytes(answer: httpx.Response) -> tuple[str, bytes]:
    """How an answer came (its content type) and its JSON-RPC message as sent: a JSON body,
    or the data of an event stream's one event."""
    kind = answer.headers["content-type"]
    if not kind.startswith("text/event-stream"):
        return kind, answer.content
    data = [line for line in answer.content.splitlines() if line.startswith(b"data: ")]
    assert len(data) == 1, answer.content
    return kind, data[0].removeprefix(b"data: ")


async def _http_answers(tmp_path: Path, env: dict[str, str]) -> list[tuple[str, bytes]]:
    """Each call of an established handshake-era session, over one kept-alive connection:
    ids alternately strings and integers."""
    found = []
    args = [PEGBOARD, "serve", "--http", "--port", "0", "--no-defer"]
    async with await anyio.open_process(args, env=env) as process:
        try:
            url = await serving_url(process)
            async with httpx.AsyncClient(timeout=30) as http:

                async def post(message: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
                    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
                    return await http.post(url, content=body, headers=headers)

                opened = await post({"id": 1, "method": "initialize", "params": INIT}, ACCEPT)
                session = opened.headers["mcp-session-id"]
                headers = ACCEPT | {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
                assert (
                    await post({"method": "notifications/initialized"}, headers)
                ).status_code == 202
                for index, (name, arguments) in enumerate(HTTP_CALLS):
                    request_id: int | str = 10 + index if index % 2 else f"call-{index}"
                    params = {"name": name, "arguments": arguments}
                    answer = await post(
                        {"id": request_id, "method": "tools/call", "params": params}, headers
                    )
                    assert answer.status_code == 200, answer.text
                    found.append(_message_bytes(answer))
        finally:
            process.terminate()
    return found


async def test_an_http_call_answers_the_same_bytes_on_the_fast_path_as_through_the_sdk(
    tmp_path: Path,
) -> None:
    servers = {
        "toolbox": sdk_server(),
        "raw": scripted_server("--names", "plain", "--mode", "typed"),
        "gated": sdk_server() | {"force_prompt_tools": ["add"]},
    }
    write_config(tmp_path, {"servers": servers})
    await run_cli(tmp_path, "servers", "refresh")
    sdk_route = gateway_env(tmp_path) | {"PEGBOARD_NO_FAST_CALLS": "1"}

    with anyio.fail_after(2 * STARTUP_BOUND):
        fast = await _http_answers(tmp_path, gateway_env(tmp_path))
        through_sdk = await _http_answers(tmp_path, sdk_route)

    # The fast path answered every call itself (one JSON body), the SDK as an event stream.
    assert [kind for kind, _ in fast] == ["application/json"] * len(HTTP_CALLS)
    assert all(kind.startswith("text/event-stream") for kind, _ in through_sdk)
    # the queued approval's id is random per gateway
    assert [_queued(body) for _, body in fast] == [_queued(body) for _, body in through_sdk]
    messages = [json.loads(body) for _, body in fast]
    assert [m["id"] for m in messages[:2]] == ["call-0", 11]
    assert messages[0]["result"]["structuredContent"] == {"result": "hi ünïcode \u2603"}
    assert "ünïcode \u2603".encode() in fast[0][1]  # not \u-escaped, as the SDK writes it
    assert messages[1]["result"]["structuredContent"] == {"result": 5}
    assert messages[3]["result"]["isError"] is True
    assert messages[8]["result"]["isError"] is True
    refusal = messages[9]["result"]
    assert refusal["isError"] is True
    assert "mcp__gated__add needs a person's approval" in refusal["content"][0]["text"]


def _queued(body: bytes) -> bytes:
    return re.sub(rb"\(request [0-9a-f]+\)", b"(request -)", body)

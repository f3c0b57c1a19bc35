"""``pegboard serve`` answers the handshake from its ready snapshot, and every request with an
id gets an answer, seen on the raw wire of a real gateway process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

import pegboard
from tests.gateway.harness import (
    PEGBOARD,
    STARTUP_BOUND,
    Lines,
    gateway_env,
    run_cli,
    sdk_server,
    write_config,
)

pytestmark = pytest.mark.anyio

INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "0"},
}


async def _handshake(
    tmp_path: Path, *, until_changed: bool = False
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """Start the gateway, initialize, list tools, then (``until_changed``) read until a
    list_changed; then a call, which only the full server answers. Returns the initialize and
    tools/list answers and the lines read in between."""
    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(
            [PEGBOARD, "serve", "--no-defer"], env=gateway_env(tmp_path)
        ) as process:
            wire = Lines(process)
            await wire.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
            init = await wire.next()
            await wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await wire.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            listed = await wire.next()
            more = []
            while until_changed and "list_changed" not in str(more):
                more.append(await wire.next())
            call = {"name": "mcp__sdk__echo", "arguments": {"text": "hi"}}
            await wire.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
            while (answer := await wire.next()).get("id") != 3:
                more.append(answer)
            assert answer["result"]["content"] == [{"type": "text", "text": "hi"}]
            assert process.stdin is not None
            await process.stdin.aclose()
    return init, listed, more


def _snapshot(tmp_path: Path) -> Path:
    [path] = (tmp_path / "data" / "ready").glob("*.json")
    return path


async def test_a_second_start_answers_the_handshake_as_the_first_did(tmp_path: Path) -> None:
    write_config(tmp_path, {"servers": {"sdk": sdk_server()}})
    await run_cli(tmp_path, "servers", "refresh")

    first = await _handshake(tmp_path)
    snapshot = json.loads(_snapshot(tmp_path).read_text())
    second = await _handshake(tmp_path)

    assert second == first
    assert first[1]["result"] == snapshot["tools"]["2025-06-18"]
    assert {t["name"] for t in first[1]["result"]["tools"]} >= {"mcp__sdk__echo"}


async def test_a_stale_snapshot_is_answered_then_corrected_by_list_changed(tmp_path: Path) -> None:
    write_config(tmp_path, {"servers": {"sdk": sdk_server()}})
    await run_cli(tmp_path, "servers", "refresh")
    await _handshake(tmp_path)
    path = _snapshot(tmp_path)
    stale = json.loads(path.read_text())
    for listed in stale["tools"].values():
        listed["tools"] = [{"name": "gone", "inputSchema": {"type": "object"}}]
    path.write_text(json.dumps(stale))

    _, listed, more = await _handshake(tmp_path, until_changed=True)

    assert listed["result"]["tools"] == [{"name": "gone", "inputSchema": {"type": "object"}}]
    assert {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} in more
    assert "gone" not in path.read_text()  # rewritten with the live list


async def test_every_request_with_an_id_gets_an_answer(tmp_path: Path) -> None:
    write_config(tmp_path, {})
    deep = {"name": "x", "arguments": {"a": json.loads("[" * 300 + "]" * 300)}}
    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(
            [PEGBOARD, "serve"], env=gateway_env(tmp_path)
        ) as process:
            wire = Lines(process)
            await wire.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
            await wire.next()
            await wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await wire.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": [1]})
            await wire.send(b'{"jsonrpc": "2.0", "id": 3, "method": "tools/li')
            await wire.send({"jsonrpc": "2.0", "method": "notifications/x", "params": [1]})
            await wire.send({"jsonrpc": "2.0", "id": "d", "method": "tools/call", "params": deep})
            await wire.send(b'{"jsonrpc": "2.0", "id": 5, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}")
            await wire.send({"jsonrpc": "2.0", "id": 6, "method": "ping"})
            answers = [await wire.next() for _ in range(5)]

    by_id = {a["id"]: a for a in answers}
    assert sorted(by_id, key=str) == [2, 5, 6, None, "d"]
    assert by_id[2]["error"] == {
        "code": -32600,
        "message": "Invalid request: params: Input should be an object",
    }
    assert by_id[None]["error"] == {"code": -32700, "message": "Parse error: the line is not JSON"}
    assert by_id[5]["error"] == {"code": -32600, "message": "Invalid request: nested too deeply"}
    assert by_id[6]["result"] == {}
    # Nested arguments that are valid JSON are a call like any other (of an unknown tool here).
    assert by_id["d"]["result"]["isError"] is True
    assert by_id["d"]["result"]["content"][0]["text"].startswith("Tool not found: x")


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
}


async def _modern_start(
    tmp_path: Path, *, listen: bool = False
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """Start the gateway as a 2026-07-28 client does: discover, list (no handshake), then
    (``listen``) open a listen stream and read until a change event, then a call."""
    meta = {"_meta": MODERN_META}
    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(
            [PEGBOARD, "serve", "--no-defer"], env=gateway_env(tmp_path)
        ) as process:
            wire = Lines(process)
            await wire.send(
                {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": meta}
            )
            discover = await wire.next()
            await wire.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": meta})
            listed = await wire.next()
            more = []
            if listen:
                wanted = {"notifications": {"toolsListChanged": True}} | meta
                message = {"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen"}
                await wire.send(message | {"params": wanted})
                while "tools/list_changed" not in str(more):
                    more.append(await wire.next())
            call = {"name": "mcp__sdk__echo", "arguments": {"text": "hi"}} | meta
            await wire.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
            while (answer := await wire.next()).get("id") != 3:
                more.append(answer)
            assert answer["result"]["content"] == [{"type": "text", "text": "hi"}]
            assert process.stdin is not None
            await process.stdin.aclose()
    return discover, listed, more


async def test_a_modern_client_is_answered_from_the_snapshot_as_the_live_server_did(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, {"servers": {"sdk": sdk_server()}})
    await run_cli(tmp_path, "servers", "refresh")

    first = await _modern_start(tmp_path)
    snapshot = json.loads(_snapshot(tmp_path).read_text())
    second = await _modern_start(tmp_path)

    assert second == first
    discover = first[0]["result"]
    assert discover["supportedVersions"][0] == "2026-07-28"
    assert discover == snapshot["discover"]["2026-07-28"]
    assert (discover["resultType"], discover["_meta"]["io.modelcontextprotocol/serverInfo"]) == (
        "complete",
        {"name": "pegboard", "title": "pegboard", "version": pegboard.__version__},
    )
    listed = first[1]["result"]
    assert listed == snapshot["tools"]["2026-07-28"]
    assert (listed["ttlMs"], listed["cacheScope"], listed["resultType"]) == (
        2000,
        "private",
        "complete",
    )
    names = [t["name"] for t in listed["tools"]]
    assert names == sorted(names)
    assert "mcp__sdk__echo" in names


async def test_a_stale_snapshot_listed_to_a_modern_client_is_corrected_once_it_listens(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, {"servers": {"sdk": sdk_server()}})
    await run_cli(tmp_path, "servers", "refresh")
    await _modern_start(tmp_path)
    path = _snapshot(tmp_path)
    stale = json.loads(path.read_text())
    stale["tools"]["2026-07-28"]["tools"] = [{"name": "gone", "inputSchema": {"type": "object"}}]
    path.write_text(json.dumps(stale))

    _, listed, more = await _modern_start(tmp_path, listen=True)

    assert [t["name"] for t in listed["result"]["tools"]] == ["gone"]
    assert more[0]["method"] == "notifications/subscriptions/acknowledged"
    [changed] = [m for m in more if m.get("method") == "notifications/tools/list_changed"]
    assert changed["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 9}

"""A ``tool_search`` sent at ready is answered from the ready snapshot, before the SDK loads,
with the bytes the full server writes for the same call, and audited by the full server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from pegboard.calls.audit_log import AUDIT_FILE, AuditLog
from pegboard.config import load_config
from pegboard.gateway.ready import ReadyAnswers
from pegboard.gateway.search_snapshot import search_section
from pegboard.gateway.server import Gateway
from pegboard.runtime import RuntimeOptions, ToolRuntime
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
from tests.gateway.test_ready import INIT

pytestmark = pytest.mark.anyio

QUERIES = ["echo the text", "add two numbers", "查询天气"]
SERVE = [PEGBOARD, "serve", "--context-window", "8000"]  # 38 tools: deferred


def _call(request_id: int, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": "tool_search", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def _searchable_snapshot(tmp_path: Path) -> dict[str, Any]:
    """Configure, list, start once and wait for the snapshot's search section."""
    write_config(
        tmp_path, {"servers": {"toolbox": sdk_server(), "bulk": victim_server("--tools", "30")}}
    )
    code, _, _ = await run_cli(tmp_path, "servers", "refresh")
    assert code == 0
    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(SERVE, env=gateway_env(tmp_path)) as process:
            wire = Lines(process)
            await wire.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
            await wire.next()
            while True:
                found = list((tmp_path / "data" / "ready").glob("*.json"))
                snapshot = json.loads(found[0].read_bytes()) if found else {}
                if "search" in snapshot:
                    break
                await anyio.sleep(0.05)
            assert process.stdin is not None
            await process.stdin.aclose()
    return snapshot


async def test_a_search_at_ready_is_answered_early_with_the_full_servers_bytes(
    tmp_path: Path,
) -> None:
    snapshot = await _searchable_snapshot(tmp_path)
    early = ReadyAnswers(snapshot)
    assert early.answer({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
    expected = [early.answer(_call(10 + i, {"query": q})) for i, q in enumerate(QUERIES)]
    assert all(expected)

    full = []
    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(SERVE, env=gateway_env(tmp_path)) as process:
            wire = Lines(process)
            await wire.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
            await wire.next()
            await wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await wire.send(_call(5, {"query": QUERIES[0]}))  # at ready: the early reader's
            at_ready = await wire.raw()
            # A call only the full server answers: what follows reaches the full server.
            echo = {"name": "mcp__toolbox__echo", "arguments": {"text": "hi"}}
            await wire.send({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": echo})
            while json.loads(await wire.raw()).get("id") != 6:
                pass
            for i, query in enumerate(QUERIES):
                await wire.send(_call(10 + i, {"query": query}))
                full.append(await wire.raw() + b"\n")
            assert process.stdin is not None
            await process.stdin.aclose()

    assert full == expected
    assert at_ready + b"\n" == early.answer(_call(5, {"query": QUERIES[0]}))
    records = AuditLog(tmp_path / "data" / AUDIT_FILE).tail(50)
    searches = [(r["tool"], r["call_id"], r["outcome"]) for r in records]
    assert searches[:2] == [("tool_search", "mcp-5", "ok"), ("mcp__toolbox__echo", "mcp-6", "ok")]
    assert searches[2:] == [("tool_search", f"mcp-{10 + i}", "ok") for i in range(3)]


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "echo", "namespace": "mcp:toolbox"},
        {"query": "echo", "verbose": True},
        {"query": "echo", "limit": 0},
        {"query": "echo", "limit": True},
        {"query": ["echo", "add"]},
        {"query": "   "},
        {},
        {"query": "xyzzy qwv"},  # finds nothing: the full server words the refusal
    ],
)
async def test_the_ready_path_leaves_any_other_search_to_the_full_server(
    tmp_path: Path, arguments: dict[str, Any]
) -> None:
    early = ReadyAnswers(await _searchable_snapshot(tmp_path))
    early.answer({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
    assert early.answer(_call(2, {"query": "echo the text"})) is not None
    assert early.answer(_call(3, arguments)) is None
    assert [s[0] for s in early.searched] == [2]


@pytest.mark.parametrize(("on_failure", "offered"), [("warn", True), ("refuse", False)])
async def test_no_search_section_when_the_audit_log_may_refuse_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_failure: str, offered: bool
) -> None:
    # A call the audit log would refuse (it cannot be written) must not be answered before
    # that check can run: the ready path gets nothing to answer from.
    for key, value in gateway_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    config = {
        "audit": {"on_failure": on_failure},
        "servers": {"toolbox": sdk_server(), "bulk": victim_server("--tools", "30")},
    }
    path = write_config(tmp_path, config)
    code, _, _ = await run_cli(tmp_path, "servers", "refresh")
    assert code == 0
    options = RuntimeOptions(context_window=8000, build_index_apart=True)
    with anyio.fail_after(STARTUP_BOUND):
        async with ToolRuntime(load_config(path), options).running() as runtime:
            runtime.surface.exposition.pool.index.search(["echo"])  # type: ignore[union-attr]
            section = search_section(Gateway(runtime.surface))
    assert (section is not None) is offered

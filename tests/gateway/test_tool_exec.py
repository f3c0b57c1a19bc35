"""tool_exec through the runtime, the gateway and a real ``pegboard serve`` subprocess, over a
real upstream MCP server: exposure on/off, the lazy sandbox, joined parallel calls, a gated
tool refused from code, one audit record per inner call."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import Client

from pegboard.calls import CallRecord
from pegboard.calls.audit_log import AUDIT_FILE
from pegboard.config import load_config
from pegboard.errors import OptionalDependencyMissing
from pegboard.gateway.server import Gateway
from pegboard.runtime import RuntimeOptions, ToolRuntime
from tests.gateway.harness import (
    STARTUP_BOUND,
    gateway_env,
    run_cli,
    scripted_server,
    serve_stdio,
    text_of,
    write_config,
)

pytestmark = pytest.mark.anyio

GATED = "mcp__s__tool_5"
META = ["tool_inspect", "tool_invoke", "tool_search"]
# The model searched, then writes one script: search again from code, three calls in parallel,
# their results joined.
SCRIPT = """
found = await tool_search(query="scripted tool", limit=3)
a, b, c = await gather(
    mcp__s__tool_1(q="x"), mcp__s__tool_2(q="y"), mcp__s__tool_3(q="z")
)
{"found": len(found["tools"]), "joined": " | ".join([a, b, c])}
"""
JOINED = 'tool_1:{"q": "x"} | tool_2:{"q": "y"} | tool_3:{"q": "z"}'
GATED_SCRIPT = f"""
try:
    await {GATED}(q="drop")
    r = "ran"
except PermissionError as e:
    r = "refused: " + str(e)
r
"""
REFUSAL = (
    f"refused: Tool {GATED} requires user approval; call it directly instead of via tool_exec, "
    "so the user can approve it."
)


async def configure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, tool_exec: bool) -> Path:
    for key, value in gateway_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    server = scripted_server("--tools", "40", "--call-log", str(tmp_path / "calls.log"))
    server["force_prompt_tools"] = ["tool_5"]
    config = {
        "context_window": 8000,  # 40 tools overflow it: all but the gated one are deferred
        "meta": {"tool_exec": tool_exec, "search": "lexical"},
        "servers": {"s": server},
    }
    path = write_config(tmp_path, config)
    code, _, err = await run_cli(tmp_path, "servers", "refresh", "s")
    assert code == 0, err
    return path


def upstream_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().split() if log.exists() else []


@asynccontextmanager
async def runtime_of(path: Path, records: list[CallRecord]) -> AsyncIterator[ToolRuntime]:
    runtime = ToolRuntime(load_config(path), RuntimeOptions(audit=records.append))
    async with runtime.running():
        yield runtime


def result_of(result: mcp_types.CallToolResult) -> Any:
    assert result.structured_content is not None, text_of(result)
    return result.structured_content["result"]


async def test_the_gateway_offers_no_tool_exec_unless_the_config_turns_it_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await configure(tmp_path, monkeypatch, tool_exec=False)
    with anyio.fail_after(STARTUP_BOUND):
        async with runtime_of(path, []) as runtime:
            gateway = Gateway(runtime.surface)
            async with Client(gateway.server, mode="legacy") as client:
                listed = [t.name for t in (await client.list_tools()).tools]
                instructions = runtime.surface.instructions() or ""
    assert listed == [GATED, *META]
    assert runtime.sandbox is None
    assert "tool_exec" not in instructions


async def test_the_gateway_runs_code_on_the_one_call_path_with_a_lazy_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await configure(tmp_path, monkeypatch, tool_exec=True)
    records: list[CallRecord] = []
    with anyio.fail_after(STARTUP_BOUND):
        async with runtime_of(path, records) as runtime:
            sandbox = runtime.sandbox
            assert sandbox is not None
            gateway = Gateway(runtime.surface)
            async with Client(gateway.server, mode="legacy") as client:
                listed = [t.name for t in (await client.list_tools()).tools]
                assert sandbox._pool is None  # listing never starts a worker
                result = await client.call_tool("tool_exec", {"code": SCRIPT})
                assert sandbox._pool is not None
                instructions = runtime.surface.instructions() or ""
    assert sandbox._pool is None  # stopped with the runtime

    assert listed == sorted([GATED, *META, "tool_exec"])
    assert "- tool_exec({code}): Python calling these tools" in instructions
    assert result_of(result) == {"found": 3, "joined": JOINED}
    assert sorted(upstream_calls(tmp_path)) == ["tool_1", "tool_2", "tool_3"]
    inner = sorted((r.tool, r.outcome) for r in records if r.via == "tool_exec")
    assert inner == [
        ("mcp__s__tool_1", "ok"),
        ("mcp__s__tool_2", "ok"),
        ("mcp__s__tool_3", "ok"),
        ("tool_search", "ok"),
    ]
    (outer,) = [r for r in records if r.via != "tool_exec"]
    assert (outer.via, outer.tool, outer.outcome) == ("gateway", "tool_exec", "ok")
    # Each inner call is a child of the outer one: <outer id>::<name>#<n>.
    assert sorted(r.call_id.rsplit("#", 1)[0] for r in records if r.via == "tool_exec") == [
        f"{outer.call_id}::{name}"
        for name in ("mcp__s__tool_1", "mcp__s__tool_2", "mcp__s__tool_3", "tool_search")
    ]


async def test_pegboard_serve_runs_a_script_that_searches_and_joins_three_parallel_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await configure(tmp_path, monkeypatch, tool_exec=True)
    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("tool_exec", {"code": SCRIPT})
            refused = await client.call_tool("tool_exec", {"code": GATED_SCRIPT})

    assert listed == sorted([GATED, *META, "tool_exec"])
    assert not result.is_error
    assert json.loads(text_of(result).splitlines()[0]) == {"found": 3, "joined": JOINED}
    assert result_of(result) == {"found": 3, "joined": JOINED}
    calls = result.structured_content["calls"]  # type: ignore[index]
    assert calls[0]["name"] == "tool_search"
    assert sorted(c["name"] for c in calls[1:]) == [f"mcp__s__tool_{i}" for i in (1, 2, 3)]
    assert result_of(refused) == REFUSAL
    # Each of the three ran once upstream; the gated tool never did.
    assert sorted(upstream_calls(tmp_path)) == ["tool_1", "tool_2", "tool_3"]
    # serve's audit log: one record per outer call and per call from code, the refusal too.
    lines = (tmp_path / "data" / AUDIT_FILE).read_text().splitlines()
    records = sorted((r["via"], r["tool"], r["outcome"]) for r in map(json.loads, lines))
    assert records == [
        ("gateway", "tool_exec", "ok"),
        ("gateway", "tool_exec", "ok"),
        ("tool_exec", "mcp__s__tool_1", "ok"),
        ("tool_exec", "mcp__s__tool_2", "ok"),
        ("tool_exec", "mcp__s__tool_3", "ok"),
        ("tool_exec", GATED, "ApprovalRequired"),
        ("tool_exec", "tool_search", "ok"),
    ]


def test_a_config_that_turns_tool_exec_on_without_the_exec_extra_fails_at_start_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in gateway_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    path = write_config(tmp_path, {"meta": {"tool_exec": True}})
    monkeypatch.setitem(sys.modules, "pydantic_monty", None)
    with pytest.raises(OptionalDependencyMissing) as caught:
        ToolRuntime(load_config(path))
    assert str(caught.value) == (
        "tool_exec (the Monty sandbox) needs an optional dependency. "
        "Install it with: pip install 'pegboard[exec]'"
    )

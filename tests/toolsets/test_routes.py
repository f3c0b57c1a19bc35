"""One scenario, three routes: the library dispatcher, the gateway and ``pegboard tools call``
must give the same answer and leave the same audit record (issue 11's drifts)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from typer.testing import CliRunner

from pegboard import ModelInfo, build_agent_params
from pegboard.calls import CallRecord
from pegboard.cli._common import CliState
from pegboard.cli.app import app
from pegboard.config import LoadedConfig, load_config
from pegboard.formats import ToolCall
from pegboard.gateway.server import Gateway
from pegboard.runtime import RuntimeOptions, ToolRuntime
from tests.gateway.harness import (
    STARTUP_BOUND,
    gateway_env,
    run_cli,
    sdk_server,
    serve_stdio,
    text_of,
    write_config,
)

pytestmark = pytest.mark.anyio

DISABLED = "mcp__toolbox__echo"
DEFERRED = "mcp__toolbox__add"
WINDOW = 8000  # the toolbox's 37 tools overflow it: everything is deferred

SCENARIOS: list[tuple[str, dict[str, Any], str]] = [
    (DISABLED, {"text": "hi"}, f"Tool not available in this request: {DISABLED}"),
    ("add", {}, f"Tool not found: add. Did you mean: {DEFERRED}?"),
    (DEFERRED, {"a": 2, "b": 3}, "5"),
]
RECORDS = [
    (DISABLED, "not_required", "ToolNotAllowed"),
    ("add", "not_required", "ToolNotFound"),
    (DEFERRED, "not_required", "ok"),
]


@pytest.fixture
async def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in gateway_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    profile = {"mcp_mode": "auto", "disabled_tools": [DISABLED]}
    server = sdk_server("--tools", "30")
    path = write_config(
        tmp_path,
        {"context_window": WINDOW, "servers": {"toolbox": server}, "profiles": {"work": profile}},
    )
    code, _, err = await run_cli(tmp_path, "servers", "refresh", "toolbox")
    assert code == 0, err
    return path


@asynccontextmanager
async def runtime_of(path: Path, records: list[CallRecord]) -> AsyncIterator[ToolRuntime]:
    runtime = ToolRuntime(load_config(path), RuntimeOptions(profile="work", audit=records.append))
    async with runtime.running():
        yield runtime


def summary(records: list[CallRecord], via: str) -> list[tuple[str, str, str]]:
    assert {r.via for r in records} == {via}
    return [(r.tool, r.approval, r.outcome) for r in records]


async def test_the_library_dispatcher_answers_and_audits_each_scenario(config: Path) -> None:
    records: list[CallRecord] = []
    with anyio.fail_after(STARTUP_BOUND):
        async with runtime_of(config, []) as runtime:
            params = build_agent_params(
                runtime.registry,
                runtime.scope(),
                ModelInfo("m", "openai", WINDOW),
                audit=records.append,
            )
            assert DEFERRED in {e.name for e in params.exposition.deferred}  # type: ignore[union-attr]
            answers = [
                (await params.dispatcher.call(ToolCall(f"c{i}", name, args))).as_text()
                for i, (name, args, _) in enumerate(SCENARIOS)
            ]

    assert answers == [expected for _, _, expected in SCENARIOS]
    assert summary(records, "direct") == RECORDS


async def test_the_gateway_answers_and_audits_each_scenario_over_an_mcp_session(
    config: Path,
) -> None:
    records: list[CallRecord] = []
    with anyio.fail_after(STARTUP_BOUND):
        async with runtime_of(config, records) as runtime:
            gateway = Gateway(runtime.surface)
            async with Client(gateway.server, mode="legacy") as client:
                listed = [t.name for t in (await client.list_tools()).tools]
                results = [await client.call_tool(name, args) for name, args, _ in SCENARIOS]

    assert listed == ["tool_inspect", "tool_invoke", "tool_search"]
    assert [text_of(r) for r in results] == [expected for _, _, expected in SCENARIOS]
    assert [r.is_error for r in results] == [True, True, False]
    assert summary(records, "gateway") == RECORDS
    [session_id] = {r.session_id for r in records}  # one per client connection
    assert session_id is not None


async def test_pegboard_serve_answers_each_scenario_like_the_library(
    config: Path, tmp_path: Path
) -> None:
    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path, "--profile", "work") as client:
            results = [await client.call_tool(name, args) for name, args, _ in SCENARIOS]

    assert [text_of(r) for r in results] == [expected for _, _, expected in SCENARIOS]


async def test_pegboard_tools_call_answers_and_audits_each_scenario(config: Path) -> None:
    records: list[CallRecord] = []

    def factory(loaded: LoadedConfig, options: RuntimeOptions) -> ToolRuntime:
        # The CLI's runtime, with the audit sink this test reads (injected, not patched).
        return ToolRuntime(loaded, dataclasses.replace(options, audit=records.append))

    runner = CliRunner()

    def call(name: str, args: dict[str, Any]) -> Any:
        import json

        argv = ["tools", "call", "--profile", "work", name, json.dumps(args)]
        return runner.invoke(app, argv, obj=CliState(runtime_factory=factory))

    results = await anyio.to_thread.run_sync(lambda: [call(n, a) for n, a, _ in SCENARIOS])

    assert [r.exit_code for r in results] == [3, 3, 0]
    assert [r.stderr for r in results[:2]] == [f"error: {e}\n" for _, _, e in SCENARIOS[:2]]
    assert results[2].stdout == "5\n"
    assert summary(records, "cli") == RECORDS

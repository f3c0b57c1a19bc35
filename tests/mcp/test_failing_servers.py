"""One rule on every route: a failing server keeps serving its last-known-good tools.

The library (``resolve_assistant_mcp_tool_ids`` -> sync -> ``build_agent_params``), the
gateway (``ToolRuntime``, what ``pegboard serve`` exposes) and the CLI (``pegboard`` in a
subprocess) run the same scenario: a server with cached tools whose command no longer starts.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from pegboard.agent import build_agent_params
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import AssistantSettings, ModelInfo, ToolApplyScope
from pegboard.errors import ServerUnavailable
from pegboard.mcp import (
    McpCatalog,
    MemoryCatalogStore,
    resolve_assistant_mcp_tool_ids,
    sync_mcp_tools_to_registry,
)
from pegboard.runtime import RuntimeOptions, ToolRuntime
from tests.gateway.harness import run_cli
from tests.mcp.conftest import scripted
from tests.test_runtime import _loaded, _names

pytestmark = pytest.mark.anyio
EXPECTED = ["mcp__a__read", "mcp__a__write", "mcp__b__search"]


async def _fail_a(catalog: McpCatalog) -> None:
    with pytest.raises(ServerUnavailable):
        await catalog.refresh_tools("a")
    assert catalog.status("a").state == "failed"


async def test_the_library_route_keeps_a_failing_servers_cached_tools(tmp_path: Path) -> None:
    runtime = ToolRuntime(_loaded(tmp_path), RuntimeOptions(prewarm=False))
    catalog = runtime.catalog
    async with catalog.running(prewarm=False):
        await _fail_a(catalog)
        ids = await resolve_assistant_mcp_tool_ids(
            AssistantSettings(mcp_mode="auto"), catalog, wait_timeout=0.1
        )
        registry = ToolRegistry()
        sync_mcp_tools_to_registry(registry, catalog, ids)
    assert ids == EXPECTED
    params = build_agent_params(
        registry,
        ToolApplyScope(mcp_tool_ids=frozenset(ids)),
        ModelInfo("m", "openai", 200_000),
    )
    assert sorted(t["function"]["name"] for t in params.tools) == EXPECTED


async def test_the_gateway_route_keeps_a_failing_servers_cached_tools(tmp_path: Path) -> None:
    runtime = ToolRuntime(_loaded(tmp_path), RuntimeOptions(prewarm=False))
    async with runtime.running():
        await _fail_a(runtime.catalog)
        runtime.resync()
        assert _names(runtime) == EXPECTED


async def test_a_cold_read_outside_a_running_catalog_stays_cold_with_only_a_debug_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The CLI reads outside running() before every command (`servers refresh X` too): a
    # warning there would tell the user to run the very command they are running.
    catalog = McpCatalog([scripted("cold")], MemoryCatalogStore())
    with caplog.at_level(logging.DEBUG, logger="pegboard.mcp.catalog"):
        assert catalog.list_tools("cold") == []
        assert catalog.list_tools("cold") == []
    records = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert records == [
        ("DEBUG", "MCP server cold has no cached tools yet and the catalog is not running")
    ]
    assert catalog.status("cold").state == "cold"


async def test_a_cold_read_inside_a_running_catalog_warms_the_server() -> None:
    catalog = McpCatalog([scripted("cold", tools=2)], MemoryCatalogStore())
    async with catalog.running(prewarm=False):
        assert catalog.list_tools("cold") == []
        await catalog.wait_warm("cold", 10.0)
        assert [t.name for t in catalog.list_tools("cold")] == ["tool_0", "tool_1"]


async def test_the_cli_route_keeps_a_failing_servers_cached_tools(tmp_path: Path) -> None:
    _loaded(tmp_path)
    code, out, _ = await run_cli(tmp_path, "servers", "refresh", "a")
    assert code == 1
    assert out.startswith("a: failed: MCP server a is not available: failed to start")

    code, out, _ = await run_cli(tmp_path, "servers", "status", "--json")
    rows = {row["id"]: row for row in json.loads(out)}
    assert code == 0
    assert (rows["a"]["state"], rows["a"]["tools"]) == ("failed", 2)
    assert rows["a"]["error"] == "failed to start: command not found (No such file or directory)"

    code, out, _ = await run_cli(tmp_path, "tools", "list", "--json")
    assert code == 0
    assert [row["name"] for row in json.loads(out)] == EXPECTED

    code, out, _ = await run_cli(tmp_path, "tools", "call", "mcp__a__read", "{}")
    assert code == 1
    assert out == (
        "MCP server a is not available: failed to start: command not found "
        "(No such file or directory)\n"
    )

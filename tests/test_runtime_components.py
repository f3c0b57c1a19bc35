"""The runtime's components are injected; constructing it does no I/O, start() does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomli_w

from pegboard.calls import CallRecord
from pegboard.config import load_config
from pegboard.core.events import CallFinished, EventBus, ToolsChanged
from pegboard.mcp import MemoryCatalogStore, StoredServer
from pegboard.runtime import RuntimeComponents, RuntimeOptions, ToolRuntime

pytestmark = pytest.mark.anyio


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    config = {"data_dir": str(tmp_path / "data"), "servers": {"a": {"command": "/nonexistent/a"}}}
    path.write_text(tomli_w.dumps(config), encoding="utf-8")
    return path


def _tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": f"{name} things", "inputSchema": {"type": "object"}}


async def test_constructing_a_runtime_opens_nothing_and_start_opens_the_default_store(
    tmp_path: Path,
) -> None:
    loaded = load_config(_config(tmp_path))
    runtime = ToolRuntime(loaded, RuntimeOptions(prewarm=False))
    assert not (tmp_path / "data").exists()
    assert await runtime.start() is runtime
    assert loaded.catalog_path.is_file()
    assert await runtime.start() is runtime  # idempotent: the same parts
    runtime.close()


async def test_injected_store_audit_and_bus_are_the_ones_the_runtime_uses(tmp_path: Path) -> None:
    loaded = load_config(_config(tmp_path))
    store = MemoryCatalogStore()
    fingerprint = loaded.config.servers["a"].fingerprint
    store.put(StoredServer("a", fingerprint=fingerprint, tools=(_tool("read"),), fetched_at=1.0))
    records: list[CallRecord] = []
    bus = EventBus()
    finished: list[CallFinished] = []
    changed: list[str] = []
    bus.subscribe(CallFinished, finished.append)
    bus.subscribe(ToolsChanged, lambda event: changed.append(event.server_id))
    components = RuntimeComponents(store=store, audit=records.append, events=bus)

    async with ToolRuntime(loaded, RuntimeOptions(prewarm=False), components=components) as rt:
        assert [t.name for t in rt.surface.list_tools()] == ["mcp__a__read"]
        assert rt.catalog.store is store
        output = await rt.surface.call_tool("nope", {}, call_id="c1", approval=None)
        await rt.catalog.clear_tools("a")

    assert output.is_error
    assert [(r.tool, r.outcome) for r in records] == [("nope", "ToolNotFound")]
    assert [event.record for event in finished] == records
    assert changed == ["a"]
    assert not (tmp_path / "data" / "catalog.sqlite3").exists()  # the injected store only
    assert store.get("a") is None


async def test_a_sync_reader_builds_the_parts_on_first_use(tmp_path: Path) -> None:
    loaded = load_config(_config(tmp_path))
    runtime = ToolRuntime(loaded, RuntimeOptions(prewarm=False))
    assert "registry" not in vars(runtime)
    assert runtime.registry.get_by_name("mcp__a__read") is None
    assert loaded.catalog_path.is_file()
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        runtime.nothing  # noqa: B018
    runtime.close()

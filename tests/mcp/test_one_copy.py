"""One copy of each upstream tool definition in the process: a listing equal to the cached one
keeps the cached objects, and the registry's tools share them (real scripted servers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pegboard.config import load_config
from pegboard.core.registry import ToolRegistry
from pegboard.mcp import McpCatalog, sync_mcp_tools_to_registry
from pegboard.mcp.poison import strip_invisible
from pegboard.runtime import ToolRuntime
from tests.cli.conftest import sdk_server, warm_cache, write
from tests.mcp.conftest import scripted

pytestmark = pytest.mark.anyio


async def test_listing_the_same_tools_again_keeps_the_cached_definitions() -> None:
    catalog = McpCatalog([scripted("s1", tools=3)])
    registry = ToolRegistry()
    async with catalog.running(prewarm=False):
        first = await catalog.refresh_tools("s1")
        sync_mcp_tools_to_registry(registry, catalog)
        again = await catalog.refresh_tools("s1")  # new JSON from the server, the same tools
        # The registry's tool holds the catalog's schema itself, not a copy of it.
        entry = registry.get_by_name("mcp__s1__tool_0")
        assert entry is not None
        assert entry.tool.input_schema is first[0].input_schema
    assert [a is b for a, b in zip(first, again, strict=True)] == [True, True, True]


def test_stripping_copies_only_what_had_invisible_characters() -> None:
    clean = {"type": "object", "properties": {"q": {"type": "string", "description": "a"}}}
    assert strip_invisible(clean) is clean
    hidden = {"type": "object", "properties": {"q": {"description": "a\u200b", "enum": ["x"]}}}
    stripped = strip_invisible(hidden)
    assert stripped["properties"]["q"] == {"description": "a", "enum": ["x"]}
    assert hidden["properties"]["q"]["description"] == "a\u200b"  # the original is untouched
    assert stripped["properties"]["q"]["enum"] is hidden["properties"]["q"]["enum"]


async def test_a_definition_keeps_no_copy_of_its_counted_text() -> None:
    catalog = McpCatalog([scripted("s1", tools=1)])
    async with catalog.running(prewarm=False):
        (definition,) = await catalog.refresh_tools("s1")
    assert definition.token_text.startswith("tool_0\n")
    assert "token_text" not in vars(definition)


def test_a_cached_list_strips_only_the_definitions_that_hide_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The catalog reads which definitions hide a tag, zero-width or bidi character from the
    # text their pins hash; the registry strips those and takes every other one as read.
    monkeypatch.setenv("PEGBOARD_DATA_DIR", str(tmp_path / "data"))
    write(tmp_path / "config.toml", {"servers": {"up": sdk_server()}})
    schema = {"type": "object", "properties": {"q": {"type": "string", "description": "a city"}}}
    hidden = {"type": "object", "properties": {"q": {"description": "a city\U000e0041"}}}
    tools = [
        {"name": "clean", "description": "Forecast.", "inputSchema": schema},
        {"name": "in_schema", "description": "Forecast.", "inputSchema": hidden},
        {"name": "in_title", "title": "Fore\u202ecast", "inputSchema": schema},
        {"name": "in_output", "inputSchema": schema, "outputSchema": hidden},
    ]
    warm_cache(tmp_path / "config.toml", "up", tools)
    runtime = ToolRuntime(load_config(tmp_path / "config.toml"))
    try:
        catalog, registry = runtime.catalog, runtime.registry
        flagged = [t["name"] for t in tools if catalog.has_invisible("up", str(t["name"]))]
        assert flagged == ["in_schema", "in_title", "in_output"]
        cached = {t.name: t for t in catalog.read_tools("up") or []}
        got = {}
        for name in cached:
            entry = registry.get_by_name(f"mcp__up__{name}")
            assert entry is not None
            got[name] = entry.tool
        assert got["clean"].input_schema is cached["clean"].input_schema  # taken as read
        assert got["in_schema"].input_schema["properties"]["q"]["description"] == "a city"
        assert got["in_title"].title == "Forecast"
        output = got["in_output"].output_schema
        assert output is not None
        assert output["properties"]["q"]["description"] == "a city"
        assert got["in_output"].input_schema is cached["in_output"].input_schema
    finally:
        runtime.close()

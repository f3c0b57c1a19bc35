"""One copy of each upstream tool definition in the process: a listing equal to the cached one
keeps the cached objects, and the registry's tools share them (real scripted servers)."""

from __future__ import annotations

import gc
import json
import logging
import types
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


def _listing_ids(id_log: Path) -> list[object]:
    lines = id_log.read_text().splitlines() if id_log.exists() else []
    found = [json.loads(line.split(" ", 1)[1]) for line in lines if line.startswith("tools/list ")]
    return ["sdk" if isinstance(i, int) else i for i in found]  # the SDK's ids are integers


async def test_an_unchanged_listing_is_read_once_without_the_sdks_client(tmp_path: Path) -> None:
    ids = tmp_path / "ids"
    catalog = McpCatalog([scripted("s1", tools=3, id_log=ids)])
    async with catalog.running(prewarm=False):
        first = await catalog.refresh_tools("s1")  # nothing cached: the SDK's client lists
        again = await catalog.refresh_tools("s1")
    # The second listing is one request of pegboard's own (a "pegboard-<n>" id), its
    # answer equal to the cached listing: the cached definitions are kept.
    assert _listing_ids(ids) == ["sdk", "pegboard-1"]
    assert [a is b for a, b in zip(first, again, strict=True)] == [True, True, True]


async def test_a_changed_listing_read_once_is_taken_as_the_sdks_client_reads_it(
    tmp_path: Path,
) -> None:
    ids, modes = tmp_path / "ids", tmp_path / "modes"
    catalog = McpCatalog([scripted("s1", tools=2, id_log=ids, mode_file=modes)])
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("s1")
        modes.write_text("rug-pull")  # the first tool's description changes
        changed = await catalog.refresh_tools("s1")
    assert _listing_ids(ids) == ["sdk", "pegboard-1"]  # not listed a second time
    # read as the SDK's client reads it, then checked: the changed tool waits for trust
    assert [t.name for t in changed] == ["tool_1"]
    assert catalog.status("s1").pending_trust == ("tool_0",)


async def test_tools_skipped_as_invalid_are_skipped_again_by_the_single_read(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    ids = tmp_path / "ids"
    catalog = McpCatalog([scripted("s1", "bad-schema", tools=3, id_log=ids)])
    with caplog.at_level(logging.WARNING, logger="pegboard.mcp.catalog"):
        async with catalog.running(prewarm=False):
            first = await catalog.refresh_tools("s1")
            caplog.clear()
            again = await catalog.refresh_tools("s1")
    assert _listing_ids(ids) == ["sdk", "pegboard-1"]
    assert [t.name for t in again] == ["tool_0", "tool_1", "tool_2"]
    assert [a is b for a, b in zip(first, again, strict=True)] == [True, True, True]
    skipped = sorted(r.getMessage().split("'")[1] for r in caplog.records if "skipping" in r.msg)
    assert skipped == ["bad_output", "bad_props", "bad_subschema", "bad_type", "no_schema"]


async def test_a_listings_json_is_not_held_once_it_is_read() -> None:
    # The SDK's receive loop keeps the last message it read until the next one arrives, and
    # the transport's reader its last line: for a listing that may be never (calls are
    # answered past the SDK), megabytes at a few thousand tools.
    import mcp_types

    catalog = McpCatalog([scripted("s1", tools=50)])
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("s1")  # nothing cached: the SDK's client lists
        gc.collect()
        listed = [
            o
            for o in gc.get_objects()
            if isinstance(o, mcp_types.JSONRPCResponse) and "tools" in o.result
        ]
        lines = [
            name
            for o in gc.get_objects()
            if isinstance(o, types.CoroutineType) and o.cr_frame is not None
            for name, value in o.cr_frame.f_locals.items()
            if isinstance(value, bytes) and b'"tools"' in value
        ]
        assert catalog.list_tools("s1")  # the tools themselves are kept, as definitions
    assert listed == []
    assert lines == []

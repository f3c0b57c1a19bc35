"""One copy of each upstream tool definition in the process: a listing equal to the cached one
keeps the cached objects, and the registry's tools share them (real scripted servers)."""

from __future__ import annotations

import pytest

from pegboard.core.registry import ToolRegistry
from pegboard.mcp import McpCatalog, sync_mcp_tools_to_registry
from pegboard.mcp.poison import strip_invisible
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

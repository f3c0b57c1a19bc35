"""Boolean and empty subschemas are valid JSON Schema: listed, kept as sent, and callable."""

from __future__ import annotations

import pytest

from pegboard.core.registry import ToolRegistry
from pegboard.core.schema import validate_arguments
from pegboard.mcp import McpCatalog, sync_mcp_tools_to_registry
from tests.mcp.conftest import scripted

pytestmark = pytest.mark.anyio


async def test_boolean_and_empty_subschemas_are_accepted_and_kept_as_sent() -> None:
    catalog = McpCatalog([scripted("s1", tools=1)])
    async with catalog.running(prewarm=False):
        [tool] = await catalog.refresh_tools("s1")
        registry = ToolRegistry()
        sync_mcp_tools_to_registry(registry, catalog)
    assert tool.input_schema["properties"] == {"q": {"type": "string"}, "any": True, "empty": {}}
    entry = registry.get_by_name("mcp__s1__tool_0")
    assert entry is not None
    args = {"q": "x", "any": [1, {"a": None}], "empty": 3.5}
    validate_arguments(entry.tool.input_schema, args, tool_name=entry.name)

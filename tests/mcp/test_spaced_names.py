"""Tool names the wire cannot carry (spaces) are served under a legal wire name, and called
under the name the server listed; names that would mislead a person are refused, visibly."""

from __future__ import annotations

from pathlib import Path

import pytest

from pegboard.core.entry import ToolSource
from pegboard.core.names import identity_digest, is_valid_wire_name, mcp_tool_name
from pegboard.core.registry import ToolRegistry
from pegboard.core.tool import ToolContext
from pegboard.mcp import McpCatalog, sync_mcp_tools_to_registry
from tests.mcp.conftest import scripted

SPACED = "send email now"


@pytest.mark.anyio
async def test_a_tool_name_with_spaces_gets_a_suffixed_wire_name_and_is_called_by_its_own(
    tmp_path: Path,
) -> None:
    calls = tmp_path / "calls.log"
    catalog = McpCatalog([scripted("s", names=f"plain,{SPACED}", call_log=calls)])
    registry = ToolRegistry()
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("s")
        sync_mcp_tools_to_registry(registry, catalog)
        wire = mcp_tool_name("s", "s", SPACED)
        entry = registry.get_by_name(wire)
        assert entry is not None
        output = await entry.tool.run({"q": "hi"}, ToolContext())

    assert wire == f"mcp__s__sendEmailNow__{identity_digest('s', SPACED)}"
    assert is_valid_wire_name(wire)
    assert sorted(e.name for e in registry.get_all()) == ["mcp__s__plain", wire]
    assert registry.resolve_source(wire) == ToolSource("s", SPACED)
    assert not output.is_error
    assert calls.read_text(encoding="utf-8").splitlines() == [SPACED]

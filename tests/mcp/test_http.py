"""The catalog against the official-SDK server over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import socket

import anyio
import pytest

from pegboard.core.entry import ToolSource
from pegboard.core.names import is_valid_wire_name, mcp_tool_name
from pegboard.core.output import AudioPart, ImagePart, ResourcePart, TextPart
from pegboard.core.registry import ToolRegistry
from pegboard.core.tool import ToolContext
from pegboard.errors import ServerUnavailable
from pegboard.mcp import McpCatalog, McpServerConfig, McpToolError, sync_mcp_tools_to_registry
from pegboard.mcp.trust import trust_tool
from tests.mcp.listen import on_tools_changed

pytestmark = pytest.mark.anyio


def remote(url: str) -> McpServerConfig:
    return McpServerConfig(
        id="web", name="Web", url=url, connect_timeout=10, list_timeout=5, call_timeout=5
    )


async def test_http_server_tools_are_listed_and_called(http_server_url: str) -> None:
    catalog = McpCatalog([remote(http_server_url)])
    async with catalog.running(prewarm=False):
        tools = await catalog.refresh_tools("web")
        names = [t.name for t in tools]
        assert names[:8] == ["echo", "add", "fail", "media", "查询天气", "grow", "env", "crash"]
        assert names[8:13] == [f"web_{i}" for i in range(5)]
        assert catalog.status("web").state == "connected"
        echo = await catalog.call_tool("web", "echo", {"text": "hi"})
        assert echo.as_text() == "hi"
        added = await catalog.call_tool("web", "add", {"a": 2, "b": 3})
        assert added.structured == {"result": 5}


async def test_http_media_parts_are_mapped_faithfully(http_server_url: str) -> None:
    catalog = McpCatalog([remote(http_server_url)])
    async with catalog.running(prewarm=False):
        output = await catalog.call_tool("web", "media", {})
    assert [type(p) for p in output.parts] == [TextPart, ImagePart, AudioPart, ResourcePart]
    assert output.parts[1] == ImagePart(data=output.parts[1].data, mime_type="image/png")  # type: ignore[union-attr]
    assert output.parts[3] == ResourcePart(
        uri="file:///notes.txt", mime_type="text/plain", text="note body"
    )
    assert "iVBOR" not in output.as_text()


async def test_is_error_result_raises_a_tool_error_with_the_server_text(
    http_server_url: str,
) -> None:
    catalog = McpCatalog([remote(http_server_url)])
    registry = ToolRegistry()
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("web")
        sync_mcp_tools_to_registry(registry, catalog)
        entry = registry.get_by_name("mcp__web__fail")
        assert entry is not None
        assert entry.label == "mcp:Web"
        with pytest.raises(McpToolError, match="quota exceeded") as caught:
            await entry.tool.run({"reason": "quota exceeded"}, ToolContext())
    assert caught.value.output.is_error is True
    assert caught.value.tool_name == "mcp__web__fail"


async def test_list_changed_reaches_the_registry_without_a_restart(http_server_url: str) -> None:
    config = remote(http_server_url)
    catalog = McpCatalog([config])
    registry = ToolRegistry()
    arrived = anyio.Event()

    def resync(server_id: str) -> None:
        sync_mcp_tools_to_registry(registry, catalog)
        if "fresh_tool" in catalog.status("web").pending_trust:
            arrived.set()

    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("web")
        sync_mcp_tools_to_registry(registry, catalog)
        assert not registry.has("mcp__web__fresh_tool")
        on_tools_changed(catalog, resync)
        output = await catalog.call_tool("web", "grow", {"name": "fresh_tool"})
        assert output.as_text() == "added fresh_tool"
        with anyio.fail_after(10):
            await arrived.wait()
        held = registry.has("mcp__web__fresh_tool")  # a tool new since trust waits
        trust_tool(catalog.store, config, "fresh_tool")
        await catalog.refresh_tools("web")
        sync_mcp_tools_to_registry(registry, catalog)
    assert not held
    assert registry.resolve_source("mcp__web__fresh_tool") == ToolSource("web", "fresh_tool")


async def test_legacy_sse_server_is_listed_and_called(sse_server_url: str) -> None:
    config = McpServerConfig.model_validate(
        {"id": "old", "type": "sse", "url": sse_server_url, "connect_timeout": 10}
    )
    catalog = McpCatalog([config])
    async with catalog.running(prewarm=False):
        tools = await catalog.refresh_tools("old")
        assert "echo" in [t.name for t in tools]
        output = await catalog.call_tool("old", "echo", {"text": "over sse"})
    assert output.as_text() == "over sse"


async def test_a_chinese_named_tool_is_registered_and_called_by_its_wire_name(
    http_server_url: str,
) -> None:
    catalog = McpCatalog([remote(http_server_url)])
    registry = ToolRegistry()
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("web")
        sync_mcp_tools_to_registry(registry, catalog)
        wire = mcp_tool_name("web", "Web", "查询天气")
        entry = registry.get_by_name(wire)
        assert entry is not None
        assert is_valid_wire_name(wire)
        assert registry.resolve_source(wire) == ToolSource("web", "查询天气")
        output = await entry.tool.run({"城市": "北京"}, ToolContext())
    assert output.as_text() == "北京: sunny"


async def test_an_unreachable_http_server_fails_alone_and_names_itself(
    http_server_url: str,
) -> None:
    with socket.socket() as sock:  # a port nothing listens on once this socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    gone = McpServerConfig(id="gone", url=f"http://127.0.0.1:{port}/mcp", connect_timeout=10)
    catalog = McpCatalog([gone, remote(http_server_url)])
    async with catalog.running(prewarm=False):
        with anyio.fail_after(8), pytest.raises(ServerUnavailable, match="MCP server gone"):
            await catalog.refresh_tools("gone")
        assert [t.name for t in await catalog.refresh_tools("web")][:2] == ["echo", "add"]
        assert [s.state for s in catalog.statuses()] == ["failed", "connected"]

"""tool_search browsing (no query): the same page and the same structured form through the
library dispatcher and the gateway (MCP ``structuredContent``)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from pegboard import ModelInfo, build_agent_params
from pegboard.formats import ToolCall
from pegboard.gateway.server import Gateway
from tests.gateway.harness import STARTUP_BOUND, text_of
from tests.toolsets.test_routes import WINDOW, config, runtime_of

pytestmark = pytest.mark.anyio
__all__ = ["config"]  # the fixture, imported for its side of the scenario

BROWSE = {"limit": 3}


async def test_browsing_gives_the_same_page_and_structured_form_on_both_routes(
    config: Path,
) -> None:
    with anyio.fail_after(STARTUP_BOUND):
        async with runtime_of(config, []) as runtime:
            params = build_agent_params(
                runtime.registry, runtime.scope(), ModelInfo("m", "openai", WINDOW)
            )
            library = await params.dispatcher.call(ToolCall("c1", "tool_search", BROWSE))
            async with Client(Gateway(runtime.surface).server, mode="legacy") as client:
                gateway = await client.call_tool("tool_search", BROWSE)

    lines = library.as_text().splitlines()
    assert lines[0] == "1 namespaces of deferred tools:"
    assert lines[1].startswith("- mcp:toolbox (")
    assert lines[-1].startswith("(1-3 of ")
    assert text_of(gateway) == library.as_text()
    structured = gateway.structured_content
    assert structured == library.structured
    assert structured is not None
    assert (structured["offset"], len(structured["tools"])) == (0, 3)
    assert structured["namespaces"][0]["namespace"] == "mcp:toolbox"
    assert structured["total"] == structured["namespaces"][0]["count"]

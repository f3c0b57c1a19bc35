"""An MCP server (stdio) whose one tool answers with the ``_meta`` its call arrived with."""

from __future__ import annotations

import json

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

server = MCPServer("traced")


@server.tool()
def meta(ctx: Context) -> str:
    """The request's _meta as JSON."""
    received = ctx.request_context.meta
    if received is None:
        return "{}"
    data = received if isinstance(received, dict) else received.model_dump(by_alias=True)
    return json.dumps(data, default=str)


if __name__ == "__main__":
    server.run("stdio")

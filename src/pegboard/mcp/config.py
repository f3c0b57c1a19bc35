"""MCP server definitions: the one model lives in :mod:`pegboard.config.server`.

``McpServerConfig`` is the name the MCP layer has always used for it.
"""

from __future__ import annotations

from pegboard.config.server import ServerConfig, Transport, parse_mcp_servers

McpServerConfig = ServerConfig

__all__ = ["McpServerConfig", "Transport", "parse_mcp_servers"]

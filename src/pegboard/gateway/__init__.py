"""`pegboard serve`: one MCP server (stdio, streamable HTTP) in front of the configured ones."""

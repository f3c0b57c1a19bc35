"""A real MCP server built with the official SDK, for tests and benchmarks.

    python sdk_server.py stdio [--tools N] [--prefix P]
    python sdk_server.py http  [--tools N] [--prefix P]   # prints "PORT <http> <sse>"

Tools: ``echo(text)``, ``add(a, b)`` (structured int), ``fail(reason)`` (isError), ``media()``
(text + image + audio + embedded resource), ``查询天气(城市)`` (Chinese name), ``grow(name)``
(adds a tool and sends ``notifications/tools/list_changed``), ``env(name)`` (reads this
process's environment), ``crash()`` (the process exits mid-call), plus ``--tools N``
generated tools ``<prefix>_<i>`` with distinct descriptions.
"""

from __future__ import annotations

import argparse
import base64
import os
import socket
import sys
from collections.abc import Callable

import anyio
import mcp_types
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-fake-image").decode()
WAV = base64.b64encode(b"RIFF-fake-audio").decode()

TOPICS = [
    "weather forecast for a city",
    "send an email message",
    "create a calendar event",
    "search files on disk",
    "translate text between languages",
    "convert currency amounts",
    "query a SQL database",
    "resize an image",
    "fetch stock prices",
    "summarise a document",
]


def build(tool_count: int, prefix: str) -> MCPServer:
    server = MCPServer("pegboard-test")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails with the given reason."""
        raise ToolError(reason)

    @server.tool()
    def media() -> list[mcp_types.ContentBlock]:
        """Returns one part of every kind."""
        return [
            mcp_types.TextContent(text="caption"),
            mcp_types.ImageContent(data=PNG, mime_type="image/png"),
            mcp_types.AudioContent(data=WAV, mime_type="audio/wav"),
            mcp_types.EmbeddedResource(
                resource=mcp_types.TextResourceContents(
                    uri="file:///notes.txt", mime_type="text/plain", text="note body"
                )
            ),
        ]

    def weather(城市: str) -> str:
        return f"{城市}: sunny"

    server.add_tool(weather, name="查询天气", description="查询城市天气")

    @server.tool()
    async def grow(name: str, ctx: Context) -> str:
        """Add a tool called ``name`` and announce the change."""

        def added(x: str = "") -> str:
            return x

        server.add_tool(added, name=name, description=f"grown tool {name}")
        await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @server.tool()
    def env(name: str) -> str:
        """The value of an environment variable in the server process, or <unset>."""
        return os.environ.get(name, "<unset>")

    @server.tool()
    def crash() -> str:
        """The server process exits in the middle of this call."""
        os._exit(3)

    for i in range(tool_count):
        topic = TOPICS[i % len(TOPICS)]
        server.add_tool(
            _generated(f"{prefix}_{i}"),
            name=f"{prefix}_{i}",
            description=f"{prefix} tool {i}: {topic} (variant {i // len(TOPICS)})",
        )
    return server


def _generated(name: str) -> Callable[..., str]:
    def generated(query: str, limit: int = 10) -> str:
        return f"{name}:{query}:{limit}"

    return generated


def _listen() -> socket.socket:
    # IPPROTO_TCP so asyncio sets TCP_NODELAY on accepted connections, as a bare SDK server's
    # uvicorn does (a fair baseline for the gateway's kept-alive HTTP latency).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


async def serve_http(server: MCPServer) -> None:
    """Streamable HTTP at /mcp on one port and legacy SSE at /sse on another."""
    import uvicorn

    http_sock, sse_sock = _listen(), _listen()
    apps = [
        (server.streamable_http_app(host="127.0.0.1"), http_sock),
        (server.sse_app(host="127.0.0.1"), sse_sock),
    ]
    ports = [sock.getsockname()[1] for _, sock in apps]
    print(f"PORT {ports[0]} {ports[1]}", flush=True)
    async with anyio.create_task_group() as tg:
        for app, sock in apps:
            config = uvicorn.Config(app, log_level="warning", lifespan="on")
            tg.start_soon(lambda c=config, s=sock: uvicorn.Server(c).serve(sockets=[s]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--prefix", default="gen")
    ns = parser.parse_args()
    server = build(ns.tools, ns.prefix)
    if ns.transport == "stdio":
        server.run("stdio")
    else:
        anyio.run(serve_http, server)


if __name__ == "__main__":
    sys.exit(main())

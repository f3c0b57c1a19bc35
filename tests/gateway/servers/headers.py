"""An MCP server over streamable HTTP on 127.0.0.1 that records the headers of every request.

    python headers.py LOG        # prints "PORT <port>"; serves /mcp

Each HTTP request it receives (whatever its path or method) appends one JSON line, the list of
its ``[name, value]`` header pairs, to LOG before the SDK's app sees it. Tool ``ping``.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.server import MCPServer

server = MCPServer("headers")


@server.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


def recording(app: Any, log: Path) -> Any:
    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            pairs = [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]]
            with log.open("a", encoding="utf-8") as out:
                out.write(json.dumps(pairs) + "\n")
        await app(scope, receive, send)

    return wrapped


async def main(log: Path) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = recording(server.streamable_http_app(host="127.0.0.1"), log)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]))

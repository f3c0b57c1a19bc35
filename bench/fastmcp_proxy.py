"""FastMCP's proxy of the servers in a JSON file, the peer pegboard's gateway is measured against.

    bench/.cache/fastmcp/bin/python bench/fastmcp_proxy.py stdio|http SERVERS.json

SERVERS.json: ``{"mcpServers": {name: {"command": ..., "args": [...]}}}`` (FastMCP's MCPConfig;
one server is proxied unprefixed, several as ``name_tool``). ``http`` prints ``PORT <port>``
when listening on 127.0.0.1. Runs in its own virtualenv (``pip install fastmcp``), never in
pegboard's.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

from fastmcp.server import create_proxy


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> None:
    transport, config = sys.argv[1], json.loads(Path(sys.argv[2]).read_text())
    proxy = create_proxy(config, name="fastmcp-proxy")
    if transport == "stdio":
        proxy.run("stdio", show_banner=False)
        return
    port = _free_port()
    print(f"PORT {port}", flush=True)
    proxy.run("http", show_banner=False, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()

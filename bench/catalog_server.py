"""A stdio MCP server (standard library only) serving a tool catalog from JSONL files.

    python bench/catalog_server.py FILE.jsonl [FILE.jsonl ...] [--limit N]

Each line of each file is a tool in the eval format (``name``, ``server``, ``description``,
``input_schema``; see ``/work/shared/eval/README.md``). A name listed twice gets its server's
name in front (``server_name``). ``tools/call`` answers ``called <name>``. The floor of the
memory rows: what the catalog costs the server that holds it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def catalog(paths: list[Path], limit: int | None) -> list[dict[str, Any]]:
    tools: dict[str, dict[str, Any]] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            raw = json.loads(line)
            name = str(raw["name"])
            if name in tools:
                name = f"{raw.get('server', 'dup')}_{name}"
            schema = raw.get("input_schema") or {"type": "object"}
            if not isinstance(schema, dict) or schema.get("type") != "object":
                schema = {"type": "object"}
            tools[name] = {
                "name": name,
                "description": str(raw.get("description") or ""),
                "inputSchema": schema,
            }
            if limit is not None and len(tools) >= limit:
                return list(tools.values())
    return list(tools.values())


def main() -> None:
    args = sys.argv[1:]
    limit = None
    if "--limit" in args:
        at = args.index("--limit")
        limit = int(args[at + 1])
        del args[at : at + 2]
    tools = catalog([Path(a) for a in args], limit)
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message:
            continue
        method, rid = message.get("method"), message["id"]
        if method == "initialize":
            version = message["params"].get("protocolVersion", "2025-11-25")
            result: dict[str, Any] = {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "catalog", "version": "0"},
            }
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "tools/call":
            text = f"called {message['params']['name']}"
            result = {"content": [{"type": "text", "text": text}]}
        elif method == "ping":
            result = {}
        else:
            error = {"code": -32601, "message": f"unknown method {method}"}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}) + "\n")
            sys.stdout.flush()
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

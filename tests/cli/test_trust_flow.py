"""Trusting an edited server is one command, and until then every message says the server
waits for trust, naming it (real memory server, real CLI processes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.gateway.harness import REFSERVERS, require_installed, run_cli, write_config

pytestmark = pytest.mark.anyio

MEMORY = REFSERVERS / "npm" / "node_modules" / ".bin" / "mcp-server-memory"
require_installed([MEMORY])


def _memory(tmp_path: Path, file: str) -> dict[str, object]:
    server = {"command": str(MEMORY), "env": {"MEMORY_FILE_PATH": str(tmp_path / file)}}
    return {"servers": {"memory": server}}


async def test_an_edited_server_waits_for_trust_and_one_command_trusts_and_starts_it(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, _memory(tmp_path, "a.jsonl"))
    assert (await run_cli(tmp_path, "servers", "refresh"))[0] == 0
    write_config(tmp_path, _memory(tmp_path, "b.jsonl"))  # the launch definition changed

    _, status, _ = await run_cli(tmp_path, "servers", "status")
    code, _, call_err = await run_cli(tmp_path, "tools", "call", "mcp__memory__read_graph")
    refresh_code, refresh, _ = await run_cli(tmp_path, "servers", "refresh", "memory")
    trust_code, trusted, trust_err = await run_cli(tmp_path, "tools", "trust", "--server", "memory")
    _, after, _ = await run_cli(tmp_path, "servers", "status", "--json")
    call_code, graph, _ = await run_cli(tmp_path, "tools", "call", "mcp__memory__read_graph")

    assert status.splitlines()[-1] == (
        "memory: launch definition changed; the server waits for trust (review "
        "`pegboard servers list`, then `pegboard tools trust --server memory`)"
    )
    assert (code, call_err) == (
        3,
        "error: mcp__memory__read_graph: MCP server memory waits for trust (its launch "
        "definition changed), so its tools are not listed; review `pegboard servers list`, "
        "then run `pegboard tools trust --server memory`\n",
    )
    assert refresh_code == 1
    assert "it waits for trust: `pegboard tools trust --server memory`" in refresh
    assert (trust_code, trust_err) == (0, "")
    assert trusted == (
        "trusted the launch definition and tools of MCP server memory; it lists 9 tools\n"
    )
    [row] = json.loads(after)
    assert (row["state"], row["tools"], row["error"]) == ("cached", 9, None)
    assert call_code == 0
    assert json.loads(graph) == {"entities": [], "relations": []}

"""The MCP Inspector's CLI mode (npm ``@modelcontextprotocol/inspector``) as the client."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.gateway.harness import (
    PEGBOARD,
    REFSERVERS,
    STARTUP_BOUND,
    gateway_env,
    require_installed,
    run_cli,
    sdk_server,
    victim_server,
    write_config,
)

pytestmark = pytest.mark.anyio

INSPECTOR = REFSERVERS / "npm" / "node_modules" / ".bin" / "mcp-inspector"
require_installed([INSPECTOR])


async def test_the_inspector_cli_calls_a_deferred_tool_through_tool_invoke(tmp_path: Path) -> None:
    write_config(
        tmp_path, {"servers": {"toolbox": sdk_server(), "bulk": victim_server("--tools", "30")}}
    )
    code, _, _ = await run_cli(tmp_path, "servers", "refresh")
    assert code == 0
    command = [
        str(INSPECTOR),
        "--cli",
        PEGBOARD,
        "serve",
        "--context-window",
        "8000",
        "--method",
        "tools/call",
        "--tool-name",
        "tool_invoke",
        "--tool-arg",
        "name=mcp__toolbox__add",
        "--tool-arg",
        'params={"a": 2, "b": 3}',
    ]

    with anyio.fail_after(STARTUP_BOUND):
        result = await anyio.run_process(command, env=gateway_env(tmp_path), check=False)

    assert result.returncode == 0, result.stderr.decode()
    assert json.loads(result.stdout) == {
        "content": [{"type": "text", "text": "5"}],
        "structuredContent": {"result": 5},
        "isError": False,
    }


async def test_the_inspector_cli_speaks_the_handshake_era_and_is_served_it(tmp_path: Path) -> None:
    """Inspector 0.15 (TypeScript SDK 1.32) opens with ``initialize`` at 2025-11-25 (no
    ``server/discover``): the gateway serves it the handshake era, as before 2026-07-28."""
    write_config(tmp_path, {"servers": {"toolbox": sdk_server()}})
    code, _, _ = await run_cli(tmp_path, "servers", "refresh")
    assert code == 0
    wire = tmp_path / "client-lines.jsonl"
    tee = tmp_path / "tee.sh"  # what the inspector sends, kept on its way to pegboard serve
    tee.write_text(f'#!/bin/sh\ntee "{wire}" | exec "{PEGBOARD}" serve --no-defer\n')
    tee.chmod(0o755)
    command = [str(INSPECTOR), "--cli", str(tee), "--method", "tools/list"]

    with anyio.fail_after(STARTUP_BOUND):
        result = await anyio.run_process(command, env=gateway_env(tmp_path), check=False)

    assert result.returncode == 0, result.stderr.decode()
    names = [t["name"] for t in json.loads(result.stdout)["tools"]]
    assert "mcp__toolbox__echo" in names
    first = json.loads(wire.read_text().splitlines()[0])
    assert (first["method"], first["params"]["protocolVersion"]) == ("initialize", "2025-11-25")
    assert "server/discover" not in wire.read_text()

"""A gated call queued because the MCP client cannot be asked names the config change that
would let it run: ``destructive_tools = "allow"`` for a tool its server annotates
``destructiveHint``, ``force_prompt_tools`` for a force-prompt tool (real memory server)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.gateway.harness import (
    REFSERVERS,
    STARTUP_BOUND,
    require_installed,
    run_cli,
    serve_stdio,
    text_of,
    write_config,
)

pytestmark = pytest.mark.anyio

MEMORY = REFSERVERS / "npm" / "node_modules" / ".bin" / "mcp-server-memory"
require_installed([MEMORY])


async def test_each_refusal_names_the_fix_of_its_own_gate(tmp_path: Path) -> None:
    memory = {
        "command": str(MEMORY),
        "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
        # read_graph is read-only: only this list gates it; delete_entities is destructive
        "force_prompt_tools": ["read_graph"],
    }
    write_config(tmp_path, {"servers": {"memory": memory}})
    code, _, _ = await run_cli(tmp_path, "servers", "refresh")
    assert code == 0

    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path) as client:  # no elicitation capability
            destructive = await client.call_tool(
                "mcp__memory__delete_entities", {"entityNames": ["x"]}
            )
            forced = await client.call_tool("mcp__memory__read_graph", {})

    assert (destructive.is_error, forced.is_error) == (True, True)
    assert text_of(destructive).startswith(
        "Tool mcp__memory__delete_entities needs a person's approval, and this MCP client "
        "cannot ask for it, so the call waits in pegboard's approvals queue"
    )
    assert text_of(destructive).endswith(
        "To let it run unasked, let destructive tools run unasked with destructive_tools = "
        '"allow" in the profile ([profiles.<name>]) of pegboard\'s config (it asks because '
        "its server annotates it destructiveHint)."
    )
    assert text_of(forced).endswith(
        "To let it run unasked, remove the tool from force_prompt_tools in pegboard's config."
    )
    assert not (tmp_path / "memory.jsonl").exists()  # nothing ran

"""Reference MCP servers from PyPI and npm behind ``pegboard servers`` and ``pegboard serve``.

They are installed by ``.ci/run`` into ``.refservers/`` (a venv of their own for the PyPI
servers, whose ``mcp`` version differs from ours, and an npm prefix).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.gateway.harness import (
    REFSERVERS,
    STARTUP_BOUND,
    require_installed,
    run_cli,
    scripted_elicitation,
    serve_stdio,
    text_of,
    write_config,
)

pytestmark = pytest.mark.anyio

PY_BIN = REFSERVERS / "py" / "bin"
NPM_BIN = REFSERVERS / "npm" / "node_modules" / ".bin"
NEEDED = [
    PY_BIN / "mcp-server-time",
    PY_BIN / "mcp-server-git",
    NPM_BIN / "mcp-server-everything",
    NPM_BIN / "mcp-server-memory",
    NPM_BIN / "mcp-server-filesystem",
]
require_installed(NEEDED)


def _config(tmp_path: Path) -> dict[str, Any]:
    repo, files = tmp_path / "repo", tmp_path / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hello\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return {
        # A 32k-token model: the ~50 tools of these servers are then deferred behind the
        # meta-tools (at the 200k default they would all be listed inline).
        "context_window": 32_000,
        "servers": {
            "time": {"command": str(PY_BIN / "mcp-server-time")},
            "git": {
                "command": str(PY_BIN / "mcp-server-git"),
                "args": ["--repository", str(repo)],
                "force_prompt_tools": ["git_reset"],
            },
            "everything": {"command": str(NPM_BIN / "mcp-server-everything")},
            "memory": {
                "command": str(NPM_BIN / "mcp-server-memory"),
                "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
            },
            "filesystem": {"command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(files)]},
        },
    }


async def test_reference_servers_are_refreshed_and_their_tools_called_through_tool_invoke(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    write_config(tmp_path, config)
    repo = config["servers"]["git"]["args"][1]

    code, out, _ = await run_cli(tmp_path, "servers", "refresh", "--json")
    rows = {row["id"]: row for row in json.loads(out)}
    assert code == 0
    assert {sid: row["ok"] for sid, row in rows.items()} == dict.fromkeys(
        ["time", "git", "everything", "memory", "filesystem"], True
    )
    assert rows["time"]["tools"] == 2

    calls = {
        "mcp__time__get_current_time": {"timezone": "UTC"},
        "mcp__everything__echo": {"message": "through pegboard"},
        "mcp__memory__read_graph": {},
        "mcp__filesystem__list_allowed_directories": {},
        "mcp__git__git_status": {"repo_path": repo},
    }
    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            results = {
                name: await client.call_tool("tool_invoke", {"name": name, "params": params})
                for name, params in calls.items()
            }

    meta = ["tool_inspect", "tool_invoke", "tool_search"]
    # Only the force-prompted tool stays inline beside the meta-tools: the tools these servers
    # annotate destructiveHint are deferred with the rest and asked for when called.
    assert [n for n in names if n in meta] == meta
    assert [n for n in names if n not in meta] == ["mcp__git__git_reset"]
    assert {name: r.is_error for name, r in results.items()} == dict.fromkeys(calls, False)
    assert json.loads(text_of(results["mcp__time__get_current_time"]))["timezone"] == "UTC"
    assert text_of(results["mcp__everything__echo"]) == "Echo: through pegboard"
    assert json.loads(text_of(results["mcp__memory__read_graph"])) == {
        "entities": [],
        "relations": [],
    }
    assert str(tmp_path / "files") in text_of(results["mcp__filesystem__list_allowed_directories"])
    assert "On branch" in text_of(results["mcp__git__git_status"])


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_deferred_destructive_tool_is_asked_for_and_never_runs_unasked(
    tmp_path: Path, mode: str
) -> None:
    """Both eras: pushed elicitation on a session (handshake), input-required rounds
    (2026-07-28), where tool_invoke's target is what the round asks about."""
    config = _config(tmp_path)
    config["servers"] = {"memory": config["servers"]["memory"]}
    config["context_window"] = 8000  # the memory server's 9 tools are then deferred
    write_config(tmp_path, config)
    code, _, _ = await run_cli(tmp_path, "servers", "refresh", "memory")
    assert code == 0
    args = {"entities": [{"name": "otter", "entityType": "animal", "observations": []}]}
    asked: list[str] = []
    elicit = scripted_elicitation(["deny", "allow_once"], asked)
    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path, elicitation=elicit, mode=mode) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            await client.call_tool(
                "tool_invoke", {"name": "mcp__memory__create_entities", "params": args}
            )
            target = {"name": "mcp__memory__delete_entities", "params": {"entityNames": ["otter"]}}
            invoked = await client.call_tool("tool_invoke", target)
            graph_after_invoke = await client.call_tool(
                "tool_invoke", {"name": "mcp__memory__read_graph", "params": {}}
            )
            direct = await client.call_tool("mcp__memory__delete_entities", target["params"])
            graph_after_direct = await client.call_tool(
                "tool_invoke", {"name": "mcp__memory__read_graph", "params": {}}
            )

    assert "mcp__memory__delete_entities" not in names  # deferred with the rest
    # Through tool_invoke the gated tool is asked for as a direct call is: denied, not run.
    assert invoked.is_error
    assert text_of(invoked).startswith(
        "The user denied the call to mcp__memory__delete_entities; it was not run."
    )
    assert [e["name"] for e in json.loads(text_of(graph_after_invoke))["entities"]] == ["otter"]
    # Called by its wire name, the deferred tool asks the user, then runs.
    assert len(asked) == 2
    assert all("mcp__memory__delete_entities" in question for question in asked)
    assert not direct.is_error
    assert json.loads(text_of(graph_after_direct))["entities"] == []


async def test_no_tool_of_the_reference_servers_is_flagged_as_poisoned(tmp_path: Path) -> None:
    """The hidden-instruction check on the real definitions (filesystem's ``read_file``,
    titled "Read File (Deprecated)", was flagged on every ``servers status``)."""
    write_config(tmp_path, _config(tmp_path))

    code, out, _ = await run_cli(tmp_path, "servers", "refresh", "--json")
    refreshed = {row["id"]: row["tools"] for row in json.loads(out)}
    _, status, _ = await run_cli(tmp_path, "servers", "status", "--json")
    flags = {row["id"]: row["flags"] for row in json.loads(status)}

    assert code == 0
    assert sum(refreshed.values()) >= 45  # every server listed (50 tools in these releases)
    assert flags == {sid: {} for sid in refreshed}

"""Upstream attacks of security.md section 2 (items 8 and 13) and the audit trail of every
route (section 3 item 7): the records land in the data directory's ``audit.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from pegboard.mcp import McpCatalog
from tests.cli.conftest import Invoke, sdk_server, warm_cache, write
from tests.gateway.harness import (
    STARTUP_BOUND,
    Notifications,
    scripted_server,
    serve_stdio,
    wait_for_tools,
    write_config,
)
from tests.mcp.conftest import scripted

PARENT_SECRETS = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "PEGBOARD_TOKEN"]


@pytest.mark.anyio
async def test_parent_secrets_never_reach_an_upstream_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in PARENT_SECRETS:
        monkeypatch.setenv(name, f"{name.lower()}-value-123")
    catalog = McpCatalog([scripted("s", env={"CONFIGURED": "yes"})])
    async with catalog.running(prewarm=False):
        seen = {
            name: (await catalog.call_tool("s", "env", {"name": name})).as_text()
            for name in [*PARENT_SECRETS, "CONFIGURED"]
        }

    assert all(f"{name.lower()}-value-123" not in seen[name] for name in PARENT_SECRETS)
    assert "yes" in seen["CONFIGURED"]


@pytest.mark.anyio
async def test_one_bad_tool_in_a_listing_exposes_only_the_valid_ones(tmp_path: Path) -> None:
    catalog = McpCatalog([scripted("s", "bad-schema", tools=2)])
    async with catalog.running(prewarm=False):
        listed = sorted(t.name for t in await catalog.refresh_tools("s"))

    assert listed == ["tool_0", "tool_1"]


def _audit(tmp_path: Path) -> list[dict[str, object]]:
    path = tmp_path / "data" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.anyio
async def test_gateway_calls_are_recorded_in_the_audit_log(tmp_path: Path) -> None:
    box = scripted_server("--tools", "2") | {"force_prompt_tools": ["tool_1"]}
    write_config(tmp_path, {"servers": {"box": box}})
    changes = Notifications()
    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path, "--no-defer", notifications=changes) as client:
            await wait_for_tools(client, changes, "mcp__box__tool_0")
            await client.call_tool("mcp__box__tool_0", {"q": "a"})
            await client.call_tool("mcp__box__tool_1", {"q": "b"})  # gated, no elicitation: queued

    records = _audit(tmp_path)
    assert [(r["tool"], r["outcome"]) for r in records] == [
        ("mcp__box__tool_0", "ok"),
        ("mcp__box__tool_1", "ApprovalQueued"),
    ]
    assert all(isinstance(r["time"], float) for r in records)


def test_a_cli_call_is_recorded_in_the_audit_log(
    invoke: Invoke, config_path: Path, tmp_path: Path
) -> None:
    write(config_path, {"servers": {"box": sdk_server()}})
    warm_cache(
        config_path,
        "box",
        [{"name": "add", "inputSchema": {"type": "object", "properties": {}}}],
    )

    result = invoke("tools", "call", "mcp__box__add", '{"a": 1, "b": 2}')
    tail = json.loads(invoke("audit", "tail", "--json").stdout)

    assert result.exit_code == 0
    assert [(r["tool"], r["via"], r["outcome"]) for r in tail] == [("mcp__box__add", "cli", "ok")]

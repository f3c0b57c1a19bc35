"""`servers status` names each tool refused for a name that would mislead a person, and why;
a name with spaces is served (SPEC section 2: nothing dropped in silence)."""

from __future__ import annotations

import json
from pathlib import Path

from pegboard.core.names import mcp_tool_name
from tests.cli.conftest import Invoke, as_json, warm_cache, write

SPACED = "send email now"
INVISIBLE = "the tool name contains an invisible character (U+200B)"


def test_servers_status_shows_each_refused_tool_with_its_reason(
    invoke: Invoke, config_path: Path
) -> None:
    write(config_path, {"servers": {"warm": {"command": "/nonexistent/a"}}})
    schema = {"type": "object"}
    tools = [
        {"name": SPACED, "inputSchema": schema},
        {"name": "get\u200bsecret", "inputSchema": schema},
        {"name": "ok ", "inputSchema": schema},
    ]
    warm_cache(config_path, "warm", tools)

    rows = as_json(invoke("servers", "status", "--json"))
    table = invoke("servers", "status")
    listing = as_json(invoke("tools", "list", "--json"))

    assert rows[0]["tools"] == 1
    assert rows[0]["refused"] == [
        {"tool": "get\u200bsecret", "reason": INVISIBLE},
        {"tool": "ok ", "reason": "the tool name begins or ends with a space"},
    ]
    lines = table.stdout.splitlines()
    assert f"warm: refused tool 'get\\u200bsecret': {INVISIBLE}" in lines
    assert "warm: refused tool 'ok ': the tool name begins or ends with a space" in lines
    assert "\u200b" not in table.stdout
    assert [row["name"] for row in listing] == [mcp_tool_name("warm", None, SPACED)]
    assert json.dumps(listing).count("secret") == 0

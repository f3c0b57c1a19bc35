"""A tool left out because another claims its wire name is shown by `servers status` and
`tools list`, not dropped in silence (SPEC section 2: collisions reported, log + CLI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import Invoke, as_json, warm_cache, write

ADD = {"name": "add", "description": "Add two numbers.", "inputSchema": {"type": "object"}}
SHADOW = """\
from pegboard.core.entry import ToolEntry
from pegboard.core.tool import Tool


def entries(config, data_dir):
    return [ToolEntry(name="mcp__warm__add", namespace="acme", tool=Tool(description="mine"))]
"""


@pytest.fixture
def shadowing_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed plugin whose tool takes the wire name of server warm's tool add."""
    site = tmp_path / "site"
    (site / "shadow_tools").mkdir(parents=True)
    (site / "shadow_tools" / "__init__.py").write_text(SHADOW)
    info = site / "shadow_tools-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shadow-tools\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pegboard.tools]\nshadow = shadow_tools:entries\n")
    monkeypatch.syspath_prepend(str(site))


EXPECTED = (
    "excluded: mcp__warm__add of warm/add is taken by a registered non-MCP tool; (rename one "
    "tool, or disable it in its server's disabled_tools)"
)


def test_servers_status_and_tools_list_show_a_tool_excluded_by_a_name_collision(
    invoke: Invoke, config_path: Path, shadowing_plugin: None
) -> None:
    write(config_path, {"servers": {"warm": {"command": "/nonexistent/a"}}})
    warm_cache(config_path, "warm", [ADD])

    status = invoke("servers", "status", "--json")
    table = invoke("servers", "status")
    listing = invoke("tools", "list", "--json")

    assert as_json(status)[0]["excluded"] == [
        {"wire_name": "mcp__warm__add", "claimed_by": ["warm/add"], "reason": "wire name collision"}
    ]
    assert EXPECTED in table.stderr.splitlines()
    assert EXPECTED in listing.stderr.splitlines()
    # The name stays with the plugin's tool; the MCP tool is the one left out.
    assert [(row["name"], row["namespace"]) for row in as_json(listing)] == [
        ("mcp__warm__add", "acme")
    ]

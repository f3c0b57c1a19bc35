"""open_runtime: the configured MCP servers from Python, stopped when the block ends."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
import tomli_w

from pegboard import ModelInfo, UserError, build_agent_params, open_runtime

pytestmark = pytest.mark.anyio
SDK_SERVER = Path(__file__).resolve().parent / "mcp" / "servers" / "sdk_server.py"


async def test_the_configured_servers_are_listed_called_and_stopped(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    server = {"command": sys.executable, "args": [str(SDK_SERVER), "stdio"]}
    config = {"data_dir": str(tmp_path / "data"), "servers": {"sdk": server}}
    path.write_text(tomli_w.dumps(config), encoding="utf-8")

    with anyio.fail_after(60):
        async with open_runtime(path) as runtime:
            await runtime.catalog.refresh_tools("sdk")
            output = await runtime.surface.call_tool(
                "mcp__sdk__add", {"a": 20, "b": 22}, call_id="1", approval=None
            )
            params = build_agent_params(runtime.registry, runtime.scope(), ModelInfo("m"))
            statuses = {s.server_id: s.state for s in runtime.catalog.statuses()}

    assert output.as_text() == "42"
    assert "mcp__sdk__add" in {e.name for e in params.entries}
    assert statuses == {"sdk": "connected"}
    assert not any(e.connection.connected for e in runtime.catalog.cache.entries())


async def test_a_named_config_that_does_not_exist_is_a_user_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(UserError) as caught:
        async with open_runtime(missing):
            pass
    assert str(caught.value) == (
        f"open_runtime: no config file at {missing}; pass an existing path, "
        "or None for $PEGBOARD_CONFIG or the default config"
    )

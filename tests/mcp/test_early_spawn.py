"""A stdio server started before the catalog runs (``pegboard serve``'s early start) is taken
over by its connection when its launch is unchanged, and stopped otherwise."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from pegboard.mcp import McpCatalog, spawn
from pegboard.mcp.transport import launch_of
from tests.gateway.harness import process_gone
from tests.mcp.conftest import SCRIPTED, scripted

pytestmark = pytest.mark.anyio


def pid_telling(server_id: str, **kw: Any) -> Any:
    """A scripted server whose ``env`` tool answers ``PID`` with its own process id (a shell
    exports it, then becomes the server)."""
    config = scripted(server_id, tools=1, **kw)
    wrapped = ["-c", 'PID=$$ exec "$0" "$@"', sys.executable, SCRIPTED, *config.args[1:]]
    return config.model_copy(update={"command": "/bin/sh", "args": tuple(wrapped)})


@pytest.fixture(autouse=True)
def _nothing_left() -> Iterator[None]:
    yield
    spawn.discard()


async def _env(catalog: McpCatalog, server_id: str, name: str) -> str:
    output = await catalog.call_tool(server_id, "env", {"name": name})
    return output.as_text().removeprefix("env:")


async def test_a_server_started_early_serves_the_connection() -> None:
    config = pid_telling("s1", env={"WHO": "configured"})
    spawn.prestart([launch_of(config)])
    early = spawn.waiting()["s1"]

    async with McpCatalog([config]).running() as catalog:
        with anyio.fail_after(20):
            assert await _env(catalog, "s1", "PID") == str(early)
            assert await _env(catalog, "s1", "WHO") == "configured"
    assert spawn.waiting() == {}
    assert process_gone(early)


async def test_a_server_whose_launch_changed_is_started_afresh() -> None:
    old = pid_telling("s1", env={"WHO": "old"})
    spawn.prestart([launch_of(old)])
    early = spawn.waiting()["s1"]
    new = old.model_copy(update={"env": {"WHO": "new"}})

    async with McpCatalog([new]).running() as catalog:
        with anyio.fail_after(20):
            assert await _env(catalog, "s1", "WHO") == "new"
            assert await _env(catalog, "s1", "PID") != str(early)
        assert process_gone(early)


async def test_early_servers_the_catalog_will_not_start_are_stopped_when_it_runs() -> None:
    kept, disabled = pid_telling("kept"), pid_telling("off", enabled=False)
    stray = pid_telling("stray")  # no longer in the config
    spawn.prestart([launch_of(c) for c in (kept, disabled, stray)])
    early = spawn.waiting()

    async with McpCatalog([kept, disabled]).running() as catalog:
        assert process_gone(early["off"])
        assert process_gone(early["stray"])
        with anyio.fail_after(20):
            assert await _env(catalog, "kept", "PID") == str(early["kept"])


def test_a_plan_takes_the_environment_from_the_config_file() -> None:
    plan = [
        {"server": "a", "argv": ["srv", "--x"], "cwd": "/tmp"},
        {"server": "b", "argv": ["other"], "cwd": None},
        {"server": "bad", "argv": "not a list"},
        "junk",
    ]
    config = b'[servers.a]\ncommand = "srv"\nenv = { TOKEN = "t0k" }\n[servers.b]\ncommand = "o"\n'

    launches = spawn.plan_launches(plan, config)

    assert launches == [
        spawn.Launch("a", ("srv", "--x"), "/tmp", {"TOKEN": "t0k"}),
        spawn.Launch("b", ("other",), None, {}),
    ]
    assert "t0k" not in str([launch.plan() for launch in launches])
    assert spawn.plan_launches(plan, b"not = [toml") == []

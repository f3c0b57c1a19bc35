"""Attack: a server renames a gated tool (``danger`` -> ``Danger`` or ``danger2``) so that its
``force_prompt_tools`` entry no longer matches, hoping the tool runs with nobody asked.

Held: a tool that appears after the server's first listing waits for ``pegboard tools trust``
(hidden and refused at the execution edge, after a restart too), and a gate naming no listed
tool is the server's status error; on a first listing it holds every tool of the server.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from pegboard.cli._common import EXIT_NOT_FOUND
from pegboard.errors import ToolNotAllowed
from pegboard.mcp import McpCatalog, SqliteCatalogStore
from pegboard.mcp.config import McpServerConfig
from pegboard.mcp.trust import trust_server
from tests.gateway.harness import (
    Notifications,
    run_cli,
    scripted_elicitation,
    scripted_server,
    serve_stdio,
    text_of,
    write_config,
)
from tests.mcp.conftest import scripted

pytestmark = pytest.mark.anyio

RENAMES = {"rename-case": "Danger", "rename-suffix": "danger2"}


def _gated(tmp_path: Path) -> tuple[Path, Path, McpServerConfig]:
    """A server listing ``danger`` (gated) and ``safe``; ``modes`` renames, ``calls`` logs."""
    modes, calls = tmp_path / "modes", tmp_path / "calls"
    base = scripted("s", names="danger,safe", mode_file=modes)
    config = base.model_copy(
        update={
            "force_prompt_tools": frozenset({"danger"}),
            "args": (*base.args, "--call-log", str(calls)),
        }
    )
    return modes, calls, config


def _visible(catalog: McpCatalog) -> list[str]:
    return sorted(t.name for t in catalog.list_tools("s"))


@pytest.mark.parametrize("mode", sorted(RENAMES))
async def test_a_tool_renamed_while_serving_is_held_and_the_dead_gate_is_an_error(
    tmp_path: Path, mode: str
) -> None:
    modes, calls, config = _gated(tmp_path)
    store_path = tmp_path / "catalog.sqlite3"
    catalog = McpCatalog([config], SqliteCatalogStore(store_path))
    renamed = RENAMES[mode]
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("s")
        before = (_visible(catalog), catalog.status("s").gate_error)
        modes.write_text(mode)
        await catalog.refresh_tools("s")  # as after list_changed
        with pytest.raises(ToolNotAllowed):
            await catalog.call_tool("s", renamed, {})
        status = catalog.status("s")
        during = _visible(catalog)
    catalog.store.close()

    restarted = McpCatalog([config], SqliteCatalogStore(store_path))
    async with restarted.running(prewarm=False):
        after_restart = _visible(restarted)
        with pytest.raises(ToolNotAllowed):
            await restarted.call_tool("s", renamed, {})
    restarted.store.close()

    assert before == (["danger", "safe"], None)
    assert during == after_restart == ["safe"]
    assert status.pending_trust == (renamed,)
    assert status.gate_error is not None
    assert "'danger'" in status.gate_error
    assert status.label.startswith("connected (error: force_prompt_tools lists 'danger'")
    assert not calls.exists()  # the refused calls never reached the server


async def test_a_first_listing_whose_gate_names_no_tool_holds_every_tool_until_trusted(
    tmp_path: Path,
) -> None:
    modes, _calls, config = _gated(tmp_path)
    modes.write_text("rename-case")  # renamed before pegboard ever listed it
    catalog = McpCatalog([config], SqliteCatalogStore(tmp_path / "c.sqlite3"))
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("s")
        held = (_visible(catalog), catalog.status("s").pending_trust)
        trust_server(catalog.store, config)
        await catalog.refresh_tools("s")
        trusted = _visible(catalog)
        status = catalog.status("s")
    catalog.store.close()

    assert held == ([], ("Danger", "safe"))
    assert trusted == ["Danger", "safe"]  # a person decided
    assert status.gate_error is not None  # and the gate still says it matches nothing


async def test_a_gate_that_matches_keeps_first_sight_trust(tmp_path: Path) -> None:
    _, _, config = _gated(tmp_path)
    catalog = McpCatalog([config], SqliteCatalogStore(tmp_path / "c.sqlite3"))
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("s")
        status = catalog.status("s")
    catalog.store.close()
    assert (status.pending_trust, status.gate_error, status.tool_count) == ((), None, 2)


@pytest.mark.parametrize("mode", ["rename-case"])  # the catalog tests cover both renames
async def test_a_tool_renamed_between_starts_is_refused_by_the_gateway_and_tools_call(
    tmp_path: Path, mode: str
) -> None:
    modes, calls = tmp_path / "modes", tmp_path / "calls"
    server = scripted_server(
        "--names", "danger,safe", "--mode-file", str(modes), "--call-log", str(calls)
    )
    write_config(tmp_path, {"servers": {"s": server | {"force_prompt_tools": ["danger"]}}})
    code, _, err = await run_cli(tmp_path, "servers", "refresh", "s")  # first trust
    assert code == 0, err
    modes.write_text(mode)
    renamed = f"mcp__s__{RENAMES[mode]}"
    asked: list[str] = []
    with anyio.fail_after(60):
        async with serve_stdio(
            tmp_path, elicitation=scripted_elicitation([], asked), notifications=Notifications()
        ) as client:
            await client.call_tool("mcp__s__safe", {})  # the server is listed by now
            listed = [t.name for t in (await client.list_tools()).tools]
            direct = await client.call_tool(renamed, {})
            invoked = await client.call_tool("tool_invoke", {"name": renamed, "params": {}})
        cli_code, cli_out, cli_err = await run_cli(tmp_path, "tools", "call", renamed, "{}")
        _, status_out, _ = await run_cli(tmp_path, "servers", "status")

    assert renamed not in listed
    assert direct.is_error
    assert invoked.is_error
    assert RENAMES[mode] not in text_of(direct).split(":")[0]  # no echo of a call that ran
    assert cli_code == EXIT_NOT_FOUND
    assert "not" in cli_err
    assert "waiting for trust" in status_out
    assert "force_prompt_tools lists 'danger'" in status_out
    assert asked == []
    assert calls.read_text().split() == ["safe"]  # only the trusted tool ever ran
    assert cli_out == ""

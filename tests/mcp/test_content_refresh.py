"""A content listing that another writer stored while ours was in flight is kept: ours began
before it, so it is the older view (two replicas on one store, each with its own stdio
upstream: the slow first listing of one must not overwrite what the other just stored)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from pegboard.mcp import McpCatalog, McpServerConfig, SqliteCatalogStore
from pegboard.mcp.store import StoredContent
from tests.gateway.harness import GATEWAY_SERVERS

pytestmark = pytest.mark.anyio

SPAWN_BOUND = 30  # a Python child's start on a loaded 2-core machine
README = {"uri": "note://readme", "name": "readme", "mimeType": "text/plain"}
SHARED = {"uri": "note://shared", "name": "shared", "mimeType": "text/plain"}


def _content_server(gate: Path) -> McpServerConfig:
    return McpServerConfig(
        id="a",
        command=sys.executable,
        args=[str(GATEWAY_SERVERS / "content.py"), "A"],
        env={"CONTENT_LIST_GATE": str(gate)},
        connect_timeout=SPAWN_BOUND,
        first_connect_timeout=SPAWN_BOUND,
        list_timeout=SPAWN_BOUND,
    )


async def _refresh_held(tmp_path: Path, stored_meanwhile: bool) -> tuple[bool, list[str]]:
    """Refresh with resources/list held; optionally store another writer's listing while it
    is held. The refresh's result and the resource URIs the cache holds after."""
    gate = tmp_path / "gate"
    config = _content_server(gate)
    catalog = McpCatalog([config], SqliteCatalogStore(tmp_path / "c.db"))
    async with catalog.running(prewarm=False):
        gate.touch()
        outcome: list[bool] = []

        async def refresh() -> None:
            outcome.append(await catalog.supervisor.refresh_content("a"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(refresh)
            with anyio.fail_after(SPAWN_BOUND):
                while not await anyio.Path(f"{gate}.held").exists():  # noqa: ASYNC110
                    await anyio.sleep(0.02)
            if stored_meanwhile:
                other = StoredContent("a", "resources", config.fingerprint, (README, SHARED))
                await catalog.cache.set_content(other)
            gate.unlink()
        held = catalog.cache.content("a", "resources")
        assert held is not None
        return outcome[0], [item["uri"] for item in held.items]


async def test_a_listing_stored_while_ours_was_in_flight_is_kept(tmp_path: Path) -> None:
    changed, uris = await _refresh_held(tmp_path, stored_meanwhile=True)
    assert uris == ["note://readme", "note://shared"]
    # templates and prompts, which nobody stored meanwhile, were still taken from our listing
    assert changed is True


async def test_a_listing_with_nothing_stored_meanwhile_is_stored(tmp_path: Path) -> None:
    changed, uris = await _refresh_held(tmp_path, stored_meanwhile=False)
    assert (changed, uris) == (True, ["note://readme"])

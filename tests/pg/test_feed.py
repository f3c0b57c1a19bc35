"""Two catalogs (two replicas) on one PostgreSQL store: what one lists or trusts reaches the
other through LISTEN/NOTIFY within 2 s, without the other asking its own server; a lost
listening connection catches up when it is back."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import psycopg
import pytest

from pegboard.core.events import ToolsChanged
from pegboard.mcp import McpCatalog, McpServerConfig, MemoryCatalogStore
from pegboard.mcp.store import StoredServer
from pegboard.mcp.store_pg import PostgresCatalogStore
from pegboard.mcp.trust import trust_tool
from pegboard.postgres import CHANNEL
from tests.mcp.conftest import requests_in, scripted
from tests.pg.cluster import Cluster, require_binaries

pytestmark = pytest.mark.anyio

REACH = 2.0  # s: the bound for a change to reach every replica


@asynccontextmanager
async def _replica(url: str, config: McpServerConfig) -> AsyncIterator[McpCatalog]:
    store = PostgresCatalogStore(url, max_connections=2)
    catalog = McpCatalog([config], store, state=MemoryCatalogStore())
    try:
        async with catalog.running(prewarm=False):
            yield catalog
    finally:
        store.close()


class _Heard:
    def __init__(self, catalog: McpCatalog) -> None:
        self.count = 0
        self.event = anyio.Event()
        catalog.events.subscribe(ToolsChanged, self._on)

    def _on(self, event: ToolsChanged) -> None:
        self.count += 1
        self.event.set()

    async def next(self) -> float:
        """Seconds until the next ToolsChanged (fails after REACH)."""
        started = time.monotonic()
        with anyio.fail_after(REACH):
            await self.event.wait()
        self.event = anyio.Event()
        return time.monotonic() - started


async def _listening(url: str) -> None:
    """Until both replicas' listening connections are up."""
    with anyio.fail_after(10):
        while True:
            with psycopg.connect(url) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE query = %s",
                    (f"LISTEN {CHANNEL}",),
                ).fetchone()
            if row and row[0] >= 2:
                return
            await anyio.sleep(0.05)


async def test_a_refresh_and_a_trust_decision_reach_the_other_replica_at_once(
    pg_url: str, tmp_path: Path
) -> None:
    modes, log = tmp_path / "modes", tmp_path / "requests.log"
    config = scripted("s", tools=2, mode_file=modes, log=log)  # one definition: one fingerprint
    async with _replica(pg_url, config) as a, _replica(pg_url, config) as b:
        await _listening(pg_url)
        heard = _Heard(b)
        await a.refresh_tools("s")
        await heard.next()
        assert [t.name for t in b.list_tools("s")] == ["tool_0", "tool_1"]

        modes.write_text("extra\nrug-pull\n")  # one more tool; tool_0's description changes
        await a.refresh_tools("s")
        await heard.next()
        # b holds what a holds: the changed tool and, beside it, the new one wait for trust
        assert [t.name for t in b.list_tools("s")] == [t.name for t in a.list_tools("s")]
        assert [t.name for t in b.list_tools("s")] == ["tool_1"]
        assert set(b.status("s").pending_trust) == {"tool_0", "extra_tool"}

        trusting = PostgresCatalogStore(pg_url)  # `pegboard tools trust` on another machine
        trust_tool(trusting, b.server("s"), "tool_0")
        trusting.close()
        await heard.next()
        assert [t.name for t in b.list_tools("s")] == ["tool_0", "tool_1"]
        assert requests_in(log, "tools/list") == 2  # a's two refreshes: b never asked its own


async def test_a_replica_that_lost_its_listening_connection_catches_up(
    pg_url: str, tmp_path: Path
) -> None:
    config = scripted("s", tools=3)
    async with _replica(pg_url, config) as a, _replica(pg_url, scripted("s", tools=3)) as b:
        await _listening(pg_url)
        heard = _Heard(b)
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = %s",
                (f"LISTEN {CHANNEL}",),
            )
        await a.refresh_tools("s")  # notified while nobody listens
        with anyio.fail_after(15):  # reconnection waits 0.5 s, then catches up
            await heard.event.wait()
        assert len(b.list_tools("s")) == 3


async def test_with_the_database_lost_cached_tools_are_listed_and_called_then_it_catches_up(
    tmp_path: Path,
) -> None:
    """A cluster of its own, stopped and started again under a running replica."""
    cluster = Cluster.create(require_binaries())
    try:
        url = cluster.url(cluster.create_database())
        config = scripted("s", tools=2)
        async with _replica(url, config) as a:
            await a.refresh_tools("s")
            cluster.stop()
            assert [t.name for t in a.list_tools("s")] == ["tool_0", "tool_1"]
            out = await a.call_tool("s", "tool_0", {"q": "still"})
            assert "still" in out.as_text()
            with anyio.fail_after(20):  # its write fails after the pool's timeout: logged
                assert len(await a.refresh_tools("s")) == 2
            cluster.start()
            heard = _Heard(a)
            other = PostgresCatalogStore(url)
            entry = a.cache.get("s")
            assert entry is not None
            assert entry.raw is not None
            other.put(StoredServer("s", config.fingerprint, entry.raw[1:]))  # tool_0 is gone
            other.close()
            with anyio.fail_after(15):  # the listener reconnects (backoff) and catches up
                await heard.event.wait()
            assert [t.name for t in a.list_tools("s")] == ["tool_1"]
    finally:
        cluster.destroy()

"""Warmers, backoff and the tools-changed event, with an injected clock (no sleeping)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from pegboard.mcp import McpCatalog, SqliteCatalogStore
from tests.mcp.conftest import requests_in, scripted
from tests.mcp.listen import on_status_changed, on_tools_changed

pytestmark = pytest.mark.anyio


class Clock:
    """Unix time that only moves when the test says so."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def names(tools: list) -> list[str]:  # type: ignore[type-arg]
    return [t.name for t in tools]


def starts(log: Path) -> int:
    """How many times the scripted server process was started."""
    return log.read_text().count("pid:") if log.exists() else 0


async def test_warm_fills_a_cold_server_and_is_a_no_op_once_populated(tmp_path: Path) -> None:
    log = tmp_path / "log"
    catalog = McpCatalog([scripted("s1", tools=2, log=log)])
    async with catalog.running(prewarm=False):
        await catalog.warm("s1")
        assert [t.name for t in catalog.list_tools("s1")] == ["tool_0", "tool_1"]
        await catalog.warm("s1")
        await catalog.warm("s1")
    assert requests_in(log, "tools/list") == 1


async def test_a_confirmed_empty_server_is_reprobed_by_warm_only_after_five_minutes(
    tmp_path: Path,
) -> None:
    log, clock = tmp_path / "log", Clock()
    catalog = McpCatalog([scripted("s1", tools=0, log=log)], clock=clock)
    assert catalog.settings.empty_backoff == 300.0
    async with catalog.running(prewarm=False):
        assert await catalog.refresh_tools("s1") == []
        clock.advance(299)
        await catalog.warm("s1")
        assert requests_in(log, "tools/list") == 1
        clock.advance(2)
        assert catalog.list_tools("s1") == []  # reads never re-probe, even after the backoff
        assert requests_in(log, "tools/list") == 1
        await catalog.warm("s1")  # past the backoff: warm lists the empty server again
        assert requests_in(log, "tools/list") == 2
        await catalog.warm("s1")  # and that empty answer starts a new five minutes
        assert requests_in(log, "tools/list") == 2


async def test_a_failed_warm_resolves_leaving_nothing_and_backs_off_thirty_seconds(
    tmp_path: Path,
) -> None:
    log, clock = tmp_path / "log", Clock()
    catalog = McpCatalog([scripted("s1", "exit", log=log)], clock=clock)
    async with catalog.running(prewarm=False):
        await catalog.warm("s1")  # never raises
        status = catalog.status("s1")
        assert (status.state, status.error) == ("failed", "server process exited with code 1")
        assert status.at == clock.now
        assert catalog.list_tools("s1") == []
        clock.advance(29)
        await catalog.warm("s1")
        assert catalog.list_tools("s1") == []
        assert starts(log) == 1
        clock.advance(2)
        await catalog.warm("s1")
        assert starts(log) == 2
    stored = catalog.cache.state.load_states()["s1"]
    assert stored.backoff_until == clock.now + 30.0


async def test_a_failed_prewarm_backs_off_thirty_seconds(tmp_path: Path) -> None:
    log, clock = tmp_path / "log", Clock()
    catalog = McpCatalog([scripted("s1", "exit", log=log)], clock=clock)
    failed = anyio.Event()
    on_status_changed(
        catalog, lambda sid: failed.set() if catalog.status(sid).state == "failed" else None
    )
    async with catalog.running():
        with anyio.fail_after(10):
            await failed.wait()
        clock.advance(29)
        await catalog.warm("s1")
        assert starts(log) == 1
        clock.advance(2)
        await catalog.warm("s1")
        assert starts(log) == 2


async def test_a_failed_refresh_after_list_changed_backs_off_thirty_seconds(
    tmp_path: Path,
) -> None:
    log, modes, clock = tmp_path / "log", tmp_path / "modes", Clock()
    config = scripted("s1", tools=0, log=log, mode_file=modes, list_timeout=0.5)
    catalog = McpCatalog([config], clock=clock)
    failed = anyio.Event()
    on_status_changed(
        catalog, lambda sid: failed.set() if catalog.status(sid).state == "failed" else None
    )
    async with catalog.running(prewarm=False):
        assert await catalog.refresh_tools("s1") == []  # empty: a five-minute backoff
        modes.write_text("hang-list")
        await catalog.call_tool("s1", "announce", {})  # sends tools/list_changed first
        with anyio.fail_after(10):
            await failed.wait()  # the re-list it triggered timed out
        assert catalog.status("s1").error == "tools/list timed out after 0.5s"
        modes.write_text("")
        clock.advance(29)
        await catalog.warm("s1")
        assert requests_in(log, "tools/list") == 2
        clock.advance(2)  # 31 s: the failure's backoff replaced the empty one
        await catalog.warm("s1")
        assert requests_in(log, "tools/list") == 3
        assert catalog.status("s1").state == "connected"


async def test_clearing_resets_the_backoff_so_warm_lists_again(tmp_path: Path) -> None:
    log = tmp_path / "log"
    store = SqliteCatalogStore(tmp_path / "c.db")
    catalog = McpCatalog([scripted("s1", tools=0, log=log)], store, clock=Clock())
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("s1")
        await catalog.warm("s1")
        assert requests_in(log, "tools/list") == 1
        await catalog.clear_tools("s1")
        assert catalog.read_tools("s1") is None
        assert store.get("s1") is None
        assert "s1" not in store.load_states()
        await catalog.warm("s1")
        assert requests_in(log, "tools/list") == 2


async def test_tools_changed_fires_three_times_across_refresh_clear_refresh(
    tmp_path: Path,
) -> None:
    catalog = McpCatalog([scripted("s1", tools=2)])
    events: list[str] = []
    on_tools_changed(catalog, events.append)
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("s1")
        await catalog.refresh_tools("s1")  # identical content: no event
        assert events == ["s1"]
        await catalog.clear_tools("s1")
        assert catalog.list_tools("s1") == []
        assert events == ["s1", "s1"]
        await catalog.refresh_tools("s1")
        assert [t.name for t in catalog.list_tools("s1")] == ["tool_0", "tool_1"]
    assert events == ["s1", "s1", "s1"]


async def test_warms_refreshes_and_cold_reads_share_one_flight(tmp_path: Path) -> None:
    log = tmp_path / "log"
    catalog = McpCatalog([scripted("s1", tools=1, log=log)])
    results: list[list[str]] = []
    reads_in_flight: list[list[list[str]]] = []

    def on_status(server_id: str) -> None:
        if catalog.status(server_id).state == "connecting":  # the flight has begun
            reads_in_flight.append([names(catalog.list_tools(server_id)) for _ in range(3)])

    async def refresh() -> None:
        results.append(names(await catalog.refresh_tools("s1")))

    on_status_changed(catalog, on_status)
    async with catalog.running(prewarm=False):
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(catalog.warm, "s1")
            tg.start_soon(refresh)
        assert results == [["tool_0"]]
        assert names(catalog.list_tools("s1")) == ["tool_0"]
    assert reads_in_flight == [[[], [], []]]
    assert requests_in(log, "tools/list") == 1
    assert starts(log) == 1


async def test_prewarm_fills_every_enabled_server_at_most_two_at_a_time(tmp_path: Path) -> None:
    configs = [scripted(f"s{i}", tools=1) for i in range(5)]
    configs.append(scripted("off", tools=1, enabled=False, log=tmp_path / "off"))
    catalog = McpCatalog(configs, prewarm_concurrency=2)
    in_flight: set[str] = set()
    filled: set[str] = set()
    most = 0
    done = anyio.Event()

    def on_status(server_id: str) -> None:
        nonlocal most
        if catalog.status(server_id).state == "connecting":
            in_flight.add(server_id)
            most = max(most, len(in_flight))

    def on_tools(server_id: str) -> None:
        in_flight.discard(server_id)
        filled.add(server_id)
        if len(filled) == 5:
            done.set()

    on_status_changed(catalog, on_status)
    on_tools_changed(catalog, on_tools)
    async with catalog.running():
        with anyio.fail_after(20):
            await done.wait()
        lists = {c.id: [t.name for t in catalog.list_tools(c.id)] for c in configs}
    assert most == 2
    assert lists == {**{f"s{i}": ["tool_0"] for i in range(5)}, "off": []}
    assert not (tmp_path / "off").exists()


async def test_leaving_the_catalog_cancels_a_hanging_prewarm_and_reaps_its_children(
    tmp_path: Path,
) -> None:
    logs = [tmp_path / f"log{i}" for i in range(2)]
    configs = [scripted(f"h{i}", "no-init", log=logs[i], connect_timeout=60) for i in range(2)]
    catalog = McpCatalog(configs)
    initializing = anyio.Event()

    def on_status(server_id: str) -> None:
        if all(catalog.status(c.id).state == "connecting" for c in configs):
            initializing.set()

    on_status_changed(catalog, on_status)
    with anyio.fail_after(10):  # far below the 60 s connect timeout
        async with catalog.running():
            await initializing.wait()
    for log in logs:
        if log.exists():  # the child got as far as starting: it must be gone now
            pid = int(log.read_text().split()[0].removeprefix("pid:"))
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)


def refreshing(catalog: McpCatalog, server_id: str) -> bool:
    """Whether a refresh of ``server_id`` is in flight (the catalog has no public view of it)."""
    entry = catalog.cache.get(server_id)
    return entry is not None and entry.flight is not None


@pytest.mark.parametrize("failed_in", ["this process", "the previous process"])
async def test_reads_never_reprobe_a_failed_server_even_after_its_backoff(
    tmp_path: Path, failed_in: str
) -> None:
    log, clock = tmp_path / "log", Clock()
    store = SqliteCatalogStore(tmp_path / "c.db")
    config = scripted("s1", "exit", log=log)
    if failed_in == "the previous process":
        async with McpCatalog([config], store, clock=clock).running(prewarm=False) as first:
            await first.warm("s1")
    catalog = McpCatalog([config], store, clock=clock)
    async with catalog.running(prewarm=False):
        if failed_in == "this process":
            assert catalog.list_tools("s1") == []  # the first read of a cold server warms it
            await catalog.wait_warm("s1", 10)  # (the start below is that warm's)
        assert catalog.status("s1").state == "failed"
        assert starts(log) == 1
        clock.advance(31)  # past the failure's backoff: only a warmer may try again
        for _ in range(3):
            assert catalog.list_tools("s1") == []
            assert catalog.read_tools("s1") is None
        await anyio.wait_all_tasks_blocked()  # a refresh a read had spawned would be running
        assert not refreshing(catalog, "s1")
        await catalog.warm("s1")
        assert starts(log) == 2

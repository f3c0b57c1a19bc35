"""Start-up and list_tools latency of the MCP catalog, against the naive connect-and-list.

    .venv/bin/python bench/catalog.py [--servers 20] [--hanging 5] [--tools 15] [--timeout 5]

Setup: ``--servers`` real stdio MCP servers (tests/mcp/servers/scripted.py), each with
``--tools`` tools. A first pegboard run lists them all into a SQLite catalog. Then
``--hanging`` of them are switched to hang (half never answer ``initialize``, half never answer
``tools/list``) without changing their command line.

Table 1, start-up until a registry holds every tool that can be known:
  * pegboard: open the SQLite catalog, start the catalog (pre-warm in the background), sync
    into a ToolRegistry;
  * naive (what peers do): connect to every server concurrently with the SDK's
    ``stdio_client`` + ``ClientSession``, ``initialize`` + ``tools/list`` each with a
    ``--timeout`` deadline, then register what came back.

Table 2, ``list_tools`` of one cached server while that server is live, hanging on
``tools/list`` (a refresh in flight) and dead (its process exits at start); baseline in the
same run: a live ``tools/list`` over an open SDK session (what a client without a cache pays
per read).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from pegboard.core.registry import ToolRegistry
from pegboard.mcp import McpCatalog, McpServerConfig, SqliteCatalogStore, sync_mcp_tools_to_registry

SCRIPTED = str(Path(__file__).resolve().parents[1] / "tests" / "mcp" / "servers" / "scripted.py")


def configs(tmp: Path, count: int, tools: int, timeout: float) -> list[McpServerConfig]:
    return [
        McpServerConfig(
            id=f"srv{i:02}",
            command=sys.executable,
            args=(SCRIPTED, "--tools", str(tools), "--mode-file", str(tmp / f"mode{i}")),
            connect_timeout=timeout,
            list_timeout=timeout,
        )
        for i in range(count)
    ]


async def populate(servers: list[McpServerConfig], db: Path) -> int:
    catalog = McpCatalog(servers, SqliteCatalogStore(db), prewarm_concurrency=len(servers))
    async with catalog.running(prewarm=False), anyio.create_task_group() as tg:
        for server in servers:
            tg.start_soon(catalog.refresh_tools, server.id)
    return sum(len(catalog.list_tools(s.id)) for s in servers)


async def pegboard_startup(servers: list[McpServerConfig], db: Path) -> tuple[float, int]:
    start = time.perf_counter()
    catalog = McpCatalog(servers, SqliteCatalogStore(db))
    async with catalog.running():
        registry = ToolRegistry()
        sync_mcp_tools_to_registry(registry, catalog)
        ready = time.perf_counter() - start
    return ready, len(registry)


async def naive_list(server: McpServerConfig, deadline: float) -> list[Any]:
    assert server.command is not None
    params = StdioServerParameters(command=server.command, args=list(server.args))
    with anyio.move_on_after(deadline):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return list((await session.list_tools()).tools)
    return []


async def naive_startup(servers: list[McpServerConfig], deadline: float) -> tuple[float, int]:
    start = time.perf_counter()
    results: dict[str, list[Any]] = {}

    async def one(server: McpServerConfig) -> None:
        results[server.id] = await naive_list(server, deadline)

    async with anyio.create_task_group() as tg:
        for server in servers:
            tg.start_soon(one, server)
    registry_size = sum(len(tools) for tools in results.values())
    return time.perf_counter() - start, registry_size


def latency_us(fn: Callable[[], object], calls: int = 20000) -> tuple[float, float]:
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    samples.sort()
    return statistics.median(samples) / 1000, samples[int(len(samples) * 0.99)] / 1000


async def read_latencies(servers: list[McpServerConfig], db: Path, tmp: Path) -> list[str]:
    live, hanging, dead = servers[-1], servers[-2], servers[-3]
    (tmp / f"mode{len(servers) - 3}").write_text("exit")
    (tmp / f"mode{len(servers) - 2}").write_text("hang-list")
    catalog = McpCatalog([live, hanging, dead], SqliteCatalogStore(db))
    rows = []
    async with catalog.running(prewarm=False), anyio.create_task_group() as tg:
        await catalog.refresh_tools(live.id)
        await _quiet(catalog.refresh_tools, dead.id)  # fails at once: the process exits
        tg.start_soon(_quiet, catalog.refresh_tools, hanging.id)
        await anyio.wait_all_tasks_blocked()
        for label, server in (("live", live), ("hanging", hanging), ("dead", dead)):
            p50, p99 = latency_us(lambda s=server: catalog.list_tools(s.id))  # type: ignore[misc]
            state = catalog.status(server.id).state
            count = len(catalog.list_tools(server.id))
            rows.append(f"| {label} ({state}) | {count} | {p50:.2f} | {p99:.2f} |")
        tg.cancel_scope.cancel()
    return rows


async def _quiet(fn: Callable[..., Any], *args: Any) -> None:
    with contextlib.suppress(Exception):
        await fn(*args)


async def live_list_baseline(server: McpServerConfig, reads: int = 200) -> tuple[float, float]:
    assert server.command is not None
    params = StdioServerParameters(command=server.command, args=list(server.args))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        samples = []
        for _ in range(reads):
            t0 = time.perf_counter_ns()
            await session.list_tools()
            samples.append(time.perf_counter_ns() - t0)
    samples.sort()
    return statistics.median(samples) / 1000, samples[int(len(samples) * 0.99)] / 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=20)
    parser.add_argument("--hanging", type=int, default=5)
    parser.add_argument("--tools", type=int, default=15)
    parser.add_argument("--timeout", type=float, default=5.0)
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory() as raw_tmp:
        tmp = Path(raw_tmp)
        db = tmp / "catalog.db"
        servers = configs(tmp, ns.servers, ns.tools, ns.timeout)
        cached = await populate(servers, db)
        for i in range(ns.hanging):
            (tmp / f"mode{i}").write_text("no-init" if i % 2 == 0 else "hang-list")
        ready, registered = await pegboard_startup(servers, db)
        naive, naive_count = await naive_startup(servers, ns.timeout)
        print(
            f"{ns.servers} stdio servers x {ns.tools} tools, {ns.hanging} hanging "
            f"(per-server timeout {ns.timeout:g} s)\n"
        )
        pegboard_row = "pegboard (SQLite cache, pre-warm in background)"
        naive_row = "naive: connect + list every server concurrently"
        print("| start-up | ready (s) | tools registered | vs pegboard |")
        print("| --- | ---: | ---: | ---: |")
        print(f"| {pegboard_row} | {ready:.3f} | {registered} of {cached} | 1x |")
        print(f"| {naive_row} | {naive:.3f} | {naive_count} of {cached} | {naive / ready:.0f}x |")
        print()
        rows = await read_latencies(servers, db, tmp)
        base_p50, base_p99 = await live_list_baseline(servers[-1])
        print("| list_tools of a cached server | tools | p50 (us) | p99 (us) |")
        print("| --- | ---: | ---: | ---: |")
        for row in rows:
            print(row)
        print(
            f"| baseline: live tools/list over an open SDK session | {ns.tools} | "
            f"{base_p50:.1f} | {base_p99:.1f} |"
        )


if __name__ == "__main__":
    anyio.run(main)

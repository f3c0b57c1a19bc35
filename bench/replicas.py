"""What the team store costs: one replica on SQLite, one on PostgreSQL, three on PostgreSQL
behind HAProxy round-robin.

    .venv/bin/python bench/replicas.py [--clients 1,8,32,64] [--seconds 5] [--changes 10]

Needs the Debian packages ``postgresql`` and ``haproxy`` (a throwaway cluster is made with
``initdb`` / ``pg_ctl`` on a free 127.0.0.1 port, as the tests do). Upstream: the stdlib
scripted server ``tests/mcp/servers/scripted.py`` (its calls echo their arguments); each
replica runs its own child.

Table 1: calls/s and p50 / p99 per ``tools/call`` at N concurrent clients (raw JSON-RPC
handshake-era sessions over HTTP; behind the balancer each session's requests go round-robin to
the three replicas, so sessions are revived on every replica), and whether nothing was lost:
the audit records with outcome ok equal the calls answered (a record per call, none twice).

Table 2: the PostgreSQL store's cost per call (p50 at 1 client, one replica: PostgreSQL minus
SQLite) and the time a catalog change takes to reach every replica: a tool list written to the
store by another process, until each of the three replicas lists it (polled every 5 ms).

On a 2-core machine three replicas cannot be faster than one: they share the same cores (and
the load generator and PostgreSQL run there too).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

import anyio
import tomli_w

from versus import AsyncRawSession, percentile  # bench/ is the script's directory

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.pg.balancer import haproxy  # noqa: E402
from tests.pg.cluster import Cluster, require_binaries  # noqa: E402
from tests.pg.replicas import replica  # noqa: E402

from pegboard.mcp.store import StoredServer  # noqa: E402
from pegboard.mcp.store_pg import PostgresCatalogStore  # noqa: E402

SCRIPTED = ROOT / "tests" / "mcp" / "servers" / "scripted.py"
TOOL = "mcp__s__tool_0"


@dataclass
class Row:
    rate: float
    p50: float
    p99: float
    calls: int
    audited: int


def write_config(folder: Path) -> Path:
    server = {"command": sys.executable, "args": [str(SCRIPTED), "--tools", "3"]}
    path = folder / "config.toml"
    path.write_text(tomli_w.dumps({"servers": {"s": server}}))
    return path


def audited(folder: Path, store_url: str | None) -> int:
    """Audit records with outcome ok: the data directory's file, or the team store's table."""
    if store_url:
        import psycopg

        with psycopg.connect(store_url) as conn:
            row = conn.execute("SELECT count(*) FROM pegboard.audit WHERE outcome = 'ok'")
            return int(row.fetchone()[0])  # type: ignore[index]
    found = 0
    for path in folder.glob("data-*/audit.jsonl"):
        for line in path.read_text().splitlines():
            if line.strip() and json.loads(line).get("outcome") == "ok":
                found += 1
    return found


async def drive(url: str, clients: int, seconds: float) -> tuple[list[float], int]:
    sessions = [AsyncRawSession(url) for _ in range(clients)]
    times: list[float] = []
    errors = 0
    try:
        for session in sessions:
            await session.open(TOOL)
        deadline = time.perf_counter() + seconds

        async def one(session: AsyncRawSession, n: int) -> None:
            nonlocal errors
            i = 0
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                args = {"name": TOOL, "arguments": {"q": f"{n}-{i}"}}
                result = await session.rpc("tools/call", args)
                if result.get("isError"):
                    errors += 1
                times.append(time.perf_counter() - started)
                i += 1

        async with anyio.create_task_group() as tg:
            for n, session in enumerate(sessions):
                tg.start_soon(one, session, n)
    finally:
        for session in sessions:
            await session.http.aclose()
    return times, errors


async def measure(
    folder: Path, url: str, store_url: str | None, levels: list[int], seconds: float
) -> dict[int, Row]:
    rows = {}
    for clients in levels:
        before = audited(folder, store_url)
        times, errors = await drive(url, clients, seconds)
        await anyio.sleep(0.5)  # the last records are written before each call returns
        if errors:
            print(f"  {errors} calls answered with an error", file=sys.stderr)
        rows[clients] = Row(
            rate=len(times) / seconds,
            p50=statistics.median(times) * 1000,
            p99=percentile(times, 0.99) * 1000,
            calls=len(times),
            audited=audited(folder, store_url) - before,
        )
        print(f"  {clients} clients: {rows[clients]}", file=sys.stderr)
    return rows


async def list_of(session: AsyncRawSession) -> list[str]:
    return [t["name"] for t in (await session.rpc("tools/list", {}))["tools"]]


async def change_reach(store_url: str, urls: list[str], changes: int) -> list[float]:
    """Seconds from a store write (another process's refresh) until every replica lists it."""
    store = PostgresCatalogStore(store_url)
    sessions = [AsyncRawSession(u) for u in urls]
    took = []
    try:
        for session in sessions:
            await session.open(TOOL)
        record = store.get("s")
        assert record is not None
        assert record.tools is not None
        full = record.tools
        for i in range(changes):
            tools = full[1:] if i % 2 == 0 else full  # drop tool_0, then list it again
            gone = i % 2 == 0
            started = time.perf_counter()
            await anyio.to_thread.run_sync(
                store.put, StoredServer("s", record.fingerprint, tools, record.tool_hashes)
            )
            for session in sessions:
                while (TOOL in await list_of(session)) == gone:  # noqa: ASYNC110
                    await anyio.sleep(0.005)
            took.append(time.perf_counter() - started)
    finally:
        for session in sessions:
            await session.http.aclose()
        store.close()
    return took


async def main(ns: argparse.Namespace) -> None:
    levels = [int(n) for n in ns.clients.split(",")]
    cluster = Cluster.create(require_binaries())
    results: dict[str, dict[int, Row]] = {}
    try:
        with tempfile.TemporaryDirectory() as name:
            root = Path(name)
            for label, store, count in (
                ("1 replica, SQLite", None, 1),
                ("1 replica, PostgreSQL", "pg", 1),
                ("3 replicas, PostgreSQL, HAProxy", "pg", 3),
            ):
                folder = root / label.replace(" ", "_").replace(",", "")
                folder.mkdir()
                write_config(folder)
                url_of_store = cluster.url(cluster.create_database()) if store else None
                print(label, file=sys.stderr)
                async with AsyncExitStack() as stack:
                    started = [
                        await stack.enter_async_context(replica(folder, f"r{i}", url_of_store))
                        for i in range(count)
                    ]
                    urls = [r.url for r in started]
                    url = urls[0]
                    if count > 1:
                        url = stack.enter_context(haproxy(folder, [r.port for r in started]))
                    results[label] = await measure(folder, url, url_of_store, levels, ns.seconds)
                    if count > 1 and url_of_store:
                        reach = await change_reach(url_of_store, urls, ns.changes)
    finally:
        cluster.destroy()
    print_tables(results, reach, levels)


def print_tables(results: dict[str, dict[int, Row]], reach: list[float], levels: list[int]) -> None:
    print("| clients | setup | calls/s | p50 (ms) | p99 (ms) | calls | audited ok |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for clients in levels:
        for label, rows in results.items():
            r = rows[clients]
            print(
                f"| {clients} | {label} | {r.rate:.0f} | {r.p50:.1f} | {r.p99:.1f} | {r.calls} "
                f"| {r.audited} |"
            )
    sqlite, pg = (results[k][levels[0]].p50 for k in list(results)[:2])
    print()
    print("| figure | value |")
    print("| --- | ---: |")
    print(
        f"| PostgreSQL store, added p50 per call at {levels[0]} client (ms) | {pg - sqlite:+.1f} |"
    )
    print(
        f"| change reaching all 3 replicas, median (ms) | {statistics.median(reach) * 1000:.0f} |"
    )
    print(f"| change reaching all 3 replicas, max (ms) | {max(reach) * 1000:.0f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="1,8,32,64", help="concurrency levels")
    parser.add_argument("--seconds", type=float, default=5.0, help="per row")
    parser.add_argument("--changes", type=int, default=10, help="store writes timed")
    anyio.run(main, parser.parse_args())

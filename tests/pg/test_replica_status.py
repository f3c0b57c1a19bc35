"""Three real ``pegboard serve --http`` replicas on one PostgreSQL store, each supervising its
own upstream children: ``pegboard servers status`` (text and --json) on another machine and
the admin page of any replica show one row per replica per server, with what that replica
saw (a server connected on two replicas and failed on the third); a killed replica is marked
stale once its heartbeat is older than ``[store] replica_stale_after``, a stopped one is gone."""

from __future__ import annotations

import json
import os
import signal
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psycopg
import pytest

from tests.gateway.harness import MCP_SERVERS, write_config
from tests.pg.replicas import replica, run_cli_on

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

STALE_AFTER = 1.5


def _rows(url: str) -> dict[tuple[str, str], str]:
    """(replica, server) -> state, as the replicas wrote them."""
    with psycopg.connect(url) as conn:
        found = conn.execute("SELECT replica, server_id, status FROM pegboard.replica_servers")
        return {(str(r), str(s)): str(state) for r, s, state in found.fetchall()}


async def _until(url: str, wanted: dict[tuple[str, str], str]) -> None:
    with anyio.fail_after(45):
        while _rows(url) != wanted:  # noqa: ASYNC110
            await anyio.sleep(0.1)


async def _status(tmp_path: Path, url: str, *args: str) -> Any:
    code, out, err = await run_cli_on(tmp_path, "laptop", url, "servers", "status", *args)
    assert code == 0, err
    return json.loads(out) if "--json" in args else out


async def test_servers_status_shows_each_replicas_view_and_marks_a_killed_one_stale(
    tmp_path: Path, pg_url: str
) -> None:
    modes = tmp_path / "modes"
    modes.write_text("")
    server = {
        "command": sys.executable,
        "args": [str(MCP_SERVERS / "scripted.py"), "--tools", "2", "--mode-file", str(modes)],
    }
    write_config(
        tmp_path,
        {"store": {"replica_stale_after": STALE_AFTER}, "servers": {"s": server}},
    )
    async with AsyncExitStack() as stack:
        r0, r1 = [
            await stack.enter_async_context(replica(tmp_path, name, pg_url))
            for name in ("r0", "r1")
        ]
        await _until(pg_url, {("r0", "s"): "connected", ("r1", "s"): "connected"})
        modes.write_text("exit\n")  # the third replica's own child exits at start
        r2 = await stack.enter_async_context(replica(tmp_path, "r2", pg_url))
        await _until(
            pg_url,
            {("r0", "s"): "connected", ("r1", "s"): "connected", ("r2", "s"): "failed"},
        )

        [row] = await _status(tmp_path, pg_url, "--json")
        views = {v["replica"]: v for v in row["replicas"]}
        assert sorted(views) == ["r0", "r1", "r2"]
        assert [(v["state"], v["tools"], v["stale"]) for v in row["replicas"][:2]] == [
            ("connected", 2, False),
            ("connected", 2, False),
        ]
        assert views["r2"]["state"] == "failed"
        assert views["r2"]["error"]
        assert views["r0"]["pid"] == r0.process.pid
        assert {"host", "last_seen", "backoff_until", "error_at"} <= set(views["r0"])

        text = await _status(tmp_path, pg_url, "--wide")
        assert "MCP server status on 3 replicas" in text
        lines = [line for line in text.splitlines() if line.startswith("s ")]
        assert [line.split()[1] for line in lines] == ["r0", "r1", "r2"]
        assert "failed" in lines[2]
        assert "stale" not in text

        async with httpx2.AsyncClient(timeout=30) as http:  # the admin page of any replica
            page = await http.get(r2.url.replace("/mcp", "/admin/servers"))
        assert page.status_code == 200, page.text
        table = page.text.split('id="replicas"')[1].split("</table>")[0]
        assert [table.count(f">r{i} <small>(pid ") for i in range(3)] == [1, 1, 1]
        assert "stale" not in table

        os.kill(r1.process.pid, signal.SIGKILL)  # a killed replica cannot say goodbye
        await r1.process.wait()
        with anyio.fail_after(15):
            while True:
                [row] = await _status(tmp_path, pg_url, "--json")
                stale = {v["replica"]: v["stale"] for v in row["replicas"]}
                if stale["r1"]:
                    break
                await anyio.sleep(0.2)
        assert stale == {"r0": False, "r1": True, "r2": False}
        text = await _status(tmp_path, pg_url)
        assert "(1 stale)" in text
        assert [line for line in text.splitlines() if "stale" in line and line.startswith("s ")]

        r0.process.terminate()  # a clean stop removes the replica's rows
        await r0.process.wait()
        assert ("r0", "s") not in _rows(pg_url)


def test_a_replica_not_seen_for_an_hour_is_forgotten_by_the_next_heartbeat(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pegboard.mcp.replicas_pg import FORGET_AFTER, PostgresReplicaBoard
    from pegboard.mcp.status import ServerStatus
    from pegboard.postgres import Database

    db = Database(pg_url)
    boards = []
    for name in ("gone", "here"):
        monkeypatch.setenv("PEGBOARD_REPLICA", name)
        boards.append(PostgresReplicaBoard(db, stale_after=STALE_AFTER))
    gone, here = boards
    try:
        gone.publish([ServerStatus("s", "s", "connected", tool_count=2)])
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE pegboard.replicas SET seen_at = seen_at - %s WHERE replica = 'gone'",
                (FORGET_AFTER - 60,),
            )
        here.publish([ServerStatus("s", "s", "failed", error="boom")])
        views = {v.replica: v for v in here.views()}
        assert (views["gone"].stale, views["here"].stale) == (True, False)
        assert (views["here"].state, views["here"].error) == ("failed", "boom")
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("UPDATE pegboard.replicas SET seen_at = seen_at - 120")
        here.publish([])  # a replica with no servers left keeps no rows of them
        assert here.views() == []
        assert _rows(pg_url) == {}
        with psycopg.connect(pg_url) as conn:
            [(left,)] = conn.execute("SELECT count(*) FROM pegboard.replicas").fetchall()
        assert left == 1  # "gone" was forgotten; "here" keeps beating
    finally:
        for board in boards:
            board.close()

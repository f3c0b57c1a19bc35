"""The audit in the team store: every replica's records in one table, and the local spool
that keeps them while the database is lost (nothing lost, nothing twice), or refuses calls
with ``[audit] on_failure = "refuse"``."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import psycopg
import pytest

from pegboard.calls import audit_pg
from pegboard.calls.audit import CallRecord
from pegboard.calls.audit_pg import PostgresAuditSink, audit_tail
from pegboard.errors import AuditUnavailable
from pegboard.postgres import Database
from tests.pg.cluster import Cluster

pytestmark = pytest.mark.anyio


def _record(n: int) -> CallRecord:
    return CallRecord(
        time=time.time(),
        via="gateway",
        tool=f"mcp__s__tool_{n}",
        call_id=f"c{n}",
        session_id="s",
        arguments_sha256="0" * 64,
        approval="not_required",
        outcome="ok",
        duration=0.001,
    )


def _count(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*), count(DISTINCT record_id) FROM pegboard.audit")
        total, distinct = row.fetchone()  # type: ignore[misc]
    assert total == distinct
    return int(total)


async def test_every_replicas_records_are_tailed_together(pg_url: str, tmp_path: Path) -> None:
    one = PostgresAuditSink(Database(pg_url), tmp_path / "a" / audit_pg.SPOOL_FILE)
    two = PostgresAuditSink(Database(pg_url), tmp_path / "b" / audit_pg.SPOOL_FILE)
    one.replica, two.replica = "one", "two"
    await one.write([_record(0), _record(1)])
    await two.write([_record(2)])
    tail = audit_tail(one.db, 10)
    assert [(r["tool"], r["replica"]) for r in tail] == [
        ("mcp__s__tool_0", "one"),
        ("mcp__s__tool_1", "one"),
        ("mcp__s__tool_2", "two"),
    ]
    assert [r["tool"] for r in two.tail(2)] == ["mcp__s__tool_1", "mcp__s__tool_2"]
    one.close()
    two.close()


async def test_records_written_while_the_database_is_lost_arrive_once_when_it_is_back(
    own_cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_pg, "RETRY_S", 0.2)
    url = own_cluster.url(own_cluster.create_database())
    spool = tmp_path / audit_pg.SPOOL_FILE
    sink = PostgresAuditSink(Database(url), spool)
    await sink.write([_record(0)])
    own_cluster.stop()
    for n in range(1, 21):
        started = time.monotonic()
        await sink.write([_record(n)])
        assert n == 1 or time.monotonic() - started < 0.5  # only the first waits for the pool
    assert spool.exists()
    own_cluster.start()
    with anyio.fail_after(20):
        while spool.exists():  # noqa: ASYNC110 - the recovery thread empties it
            await anyio.sleep(0.1)
    assert _count(url) == 21
    await sink.write([_record(21)])
    assert _count(url) == 22
    sink.close()


async def test_a_spool_replayed_after_a_crash_writes_nothing_twice(
    pg_url: str, tmp_path: Path
) -> None:
    spool = tmp_path / audit_pg.SPOOL_FILE
    sink = PostgresAuditSink(Database(pg_url), spool)
    rows = [sink._row(_record(n)) for n in range(3)]
    sink._insert(rows)  # committed, and then the process died before emptying the spool:
    sink._append_spool(rows)
    await sink.write([_record(3)])
    assert _count(pg_url) == 4
    assert not spool.exists()
    sink.close()


async def test_a_full_spool_drops_what_does_not_fit_and_says_so(
    own_cluster: Cluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = own_cluster.url(own_cluster.create_database())
    sink = PostgresAuditSink(Database(url), tmp_path / audit_pg.SPOOL_FILE, max_spool_bytes=2000)
    own_cluster.stop()
    for n in range(20):
        await sink.write([_record(n)])
    assert "is full" in caplog.text
    assert (tmp_path / audit_pg.SPOOL_FILE).stat().st_size <= 2000
    sink.close()


async def test_refuse_mode_refuses_calls_while_the_database_is_lost(
    own_cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit_pg, "RETRY_S", 0.2)
    url = own_cluster.url(own_cluster.create_database())
    sink = PostgresAuditSink(Database(url), tmp_path / audit_pg.SPOOL_FILE, on_failure="refuse")
    sink.check()
    own_cluster.stop()
    await sink.write([_record(0)])  # the write that finds it lost
    with pytest.raises(AuditUnavailable, match='on_failure = "refuse"'):
        sink.check()
    own_cluster.start()
    with anyio.fail_after(20):
        while True:
            try:
                sink.check()
                break
            except AuditUnavailable:
                await anyio.sleep(0.1)
    assert _count(url) == 1  # the record of the call that found it lost was kept
    sink.close()

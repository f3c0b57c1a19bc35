"""Gated calls while the team store's PostgreSQL is stopped (``pg_ctl stop``) under a serving
replica: a handshake-era client is asked as usual and the call runs once; "allow once" covers
that one call only; "allow for this session" covers the next ones (kept on the replica) and is
written to the store once it is back; a modern client's call, whose answer would come in a
second request any replica may take, is refused with one line and not run. Without the
fallback the gated calls fail. ``[limits]`` are counted on the replica meanwhile, and by the
shared buckets again once the store is back."""

from __future__ import annotations

import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pegboard.calls.fallback import (
    ONCE_LOST_LINE,
    STORE_LOST_LINE,
    FallbackGrantStore,
    FallbackRateLimiter,
)
from pegboard.calls.grants import Grant, GrantKey
from pegboard.calls.grants_pg import PostgresGrantStore
from pegboard.calls.limits import Limit
from pegboard.calls.limits_pg import PostgresRateLimiter
from pegboard.errors import StoreError
from tests.gateway.harness import MCP_SERVERS, scripted_elicitation, text_of, write_config
from tests.pg.cluster import Cluster
from tests.pg.replicas import replica

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _grants(url: str) -> list[tuple[str, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tool_name, scope FROM pegboard.grants").fetchall()
    return [(str(t), str(s)) for t, s in rows]


async def test_gated_calls_are_asked_and_run_once_while_the_store_is_stopped(
    tmp_path: Path, own_cluster: Cluster
) -> None:
    url = own_cluster.url(own_cluster.create_database())
    calls = tmp_path / "calls.log"
    args = [str(MCP_SERVERS / "scripted.py"), "--tools", "2", "--call-log", str(calls)]
    server = {"command": sys.executable, "args": args, "force_prompt_tools": ["tool_1"]}
    limits = {"per_tool": {"mcp__s__tool_0": 3}}  # shared buckets: lost with the store
    write_config(tmp_path, {"servers": {"s": server}, "limits": limits})
    asked: list[str] = []
    modern_asked: list[str] = []
    async with AsyncExitStack() as stack:
        one = await stack.enter_async_context(replica(tmp_path, "one", url))
        http = await stack.enter_async_context(
            httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120))
        )
        legacy = await stack.enter_async_context(
            Client(
                streamable_http_client(one.url, http_client=http),
                mode="legacy",
                elicitation_callback=scripted_elicitation(["allow_once", "allow_session"], asked),
            )
        )
        modern = await stack.enter_async_context(
            Client(
                streamable_http_client(one.url, http_client=http),
                mode="2026-07-28",
                elicitation_callback=scripted_elicitation(["allow_once"], modern_asked),
            )
        )
        with anyio.fail_after(45):
            while "mcp__s__tool_1" not in [t.name for t in (await legacy.list_tools()).tools]:  # noqa: ASYNC110
                await anyio.sleep(0.1)

        own_cluster.stop()
        started = time.monotonic()
        with anyio.fail_after(60):
            for _ in range(2):  # allow once: that call only; asked again, then for the session
                result = await legacy.call_tool("mcp__s__tool_1", {"q": "x"})
                assert (result.is_error, text_of(result)) == (False, 'tool_1:{"q": "x"}')
            assert len(asked) == 2
            for _ in range(2):  # the session's yes, kept on the replica, covers these
                result = await legacy.call_tool("mcp__s__tool_1", {"q": "x"})
                assert result.is_error is False, text_of(result)
            assert len(asked) == 2
            refused = await modern.call_tool("mcp__s__tool_1", {"q": "modern"})
            assert (refused.is_error, text_of(refused)) == (True, STORE_LOST_LINE)
            assert modern_asked == []  # not asked: its answer could not be checked
            for _ in range(3):  # limited calls keep working, counted on this replica
                plain = await modern.call_tool("mcp__s__tool_0", {"q": "plain"})
                assert plain.is_error is False, text_of(plain)
            limited = await modern.call_tool("mcp__s__tool_0", {"q": "plain"})
            assert limited.is_error is True
            assert "retry after" in text_of(limited), text_of(limited)
        assert time.monotonic() - started < 30  # no step waits the pool's timeout each time
        assert calls.read_text().split().count("tool_1") == 4

        own_cluster.start()
        with anyio.fail_after(60):  # the next approval step after the store is back writes it
            while ("mcp__s__tool_1", "session") not in _grants(url):
                result = await legacy.call_tool("mcp__s__tool_1", {"q": "x"})
                assert result.is_error is False, text_of(result)
                await anyio.sleep(0.5)
        assert len(asked) == 2


async def test_a_once_grant_is_not_kept_while_the_store_is_lost(own_cluster: Cluster) -> None:
    url = own_cluster.url(own_cluster.create_database())
    store = FallbackGrantStore(PostgresGrantStore(url))
    key = GrantKey("alice", "mcp__s__tool_1", "def", "args")
    try:
        own_cluster.stop()
        with pytest.raises(StoreError, match="an approval for one later call cannot be kept"):
            await store.add(Grant(key, "once", "sess"))
        assert ONCE_LOST_LINE.startswith("The team store (PostgreSQL) is unreachable")
        assert await store.consume(key, "sess") is None
        await store.add(Grant(key, "session", "sess"))
        assert (await store.consume(key, "sess")) is not None
        own_cluster.start()
        with anyio.fail_after(30):
            while not (_reachable(url) and _grants(url)):
                await store.find(key, "sess")
                await anyio.sleep(0.2)
        assert _grants(url) == [("mcp__s__tool_1", "session")]
    finally:
        store.close()


async def test_rate_limits_are_counted_on_the_replica_while_the_store_is_lost(
    own_cluster: Cluster,
) -> None:
    url = own_cluster.url(own_cluster.create_database())
    limiter = FallbackRateLimiter(PostgresRateLimiter(url))
    one = Limit(1, "mcp__s__tool_0")
    try:
        assert await limiter.take("alice", one) is None  # the shared bucket's one call
        own_cluster.stop()
        assert await limiter.take("alice", one) is None  # this replica's own bucket
        wait = await limiter.take("alice", one)
        assert wait is not None
        assert 0 < wait <= 60
        own_cluster.start()
        with anyio.fail_after(30):
            while not _reachable(url):  # noqa: ASYNC110
                await anyio.sleep(0.2)
        wait = await limiter.take("alice", one)  # the shared bucket again: spent before
        assert wait is not None
        assert 0 < wait <= 60
        assert await limiter.take("bob", one) is None
    finally:
        limiter.close()


def _reachable(url: str) -> bool:
    try:
        psycopg.connect(url, connect_timeout=1).close()
    except psycopg.OperationalError:
        return False
    return True

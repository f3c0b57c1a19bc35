"""Two real ``pegboard serve --http`` replicas on one PostgreSQL store: a ``pegboard servers
refresh`` on a third machine reaches the clients of both replicas, in both protocol eras,
within 2 s (list-changed, then the new list), though neither replica asked its own server."""

from __future__ import annotations

import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged

from tests.gateway.harness import (
    MCP_SERVERS,
    Notifications,
    wait_for_list,
    wait_for_tools,
    write_config,
)
from tests.pg.replicas import replica, run_cli_on

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REACH = 2.0
GONE = "mcp__s__extra_tool"


async def test_a_cli_refresh_reaches_every_client_of_every_replica_within_2_s(
    tmp_path: Path, pg_url: str
) -> None:
    modes = tmp_path / "modes"
    modes.write_text("extra\n")  # first listed with a third tool, extra_tool
    server = {
        "command": sys.executable,
        "args": [str(MCP_SERVERS / "scripted.py"), "--tools", "2", "--mode-file", str(modes)],
    }
    write_config(tmp_path, {"servers": {"s": server}})
    async with AsyncExitStack() as stack:
        replicas = [
            await stack.enter_async_context(replica(tmp_path, name, pg_url))
            for name in ("one", "two")
        ]
        http = await stack.enter_async_context(
            httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120))
        )
        legacy: list[tuple[Client, Notifications]] = []
        modern: list[tuple[Client, object]] = []
        for each in replicas:
            heard = Notifications()
            client = await stack.enter_async_context(
                Client(
                    streamable_http_client(each.url, http_client=http),
                    mode="legacy",
                    message_handler=heard,
                )
            )
            with anyio.fail_after(45):
                await wait_for_tools(client, heard, "mcp__s__tool_0", GONE)
            legacy.append((client, heard))
            new = await stack.enter_async_context(
                Client(streamable_http_client(each.url, http_client=http), mode="2026-07-28")
            )
            listening = await stack.enter_async_context(new.listen(tools_list_changed=True))
            modern.append((new, listening))
        for client, _ in [*legacy, *modern]:
            assert GONE in [t.name for t in (await client.list_tools()).tools]

        modes.write_text("")  # the server drops extra_tool; a refresh on a laptop sees it
        code, _, stderr = await run_cli_on(tmp_path, "laptop", pg_url, "servers", "refresh", "s")
        assert code == 0, stderr
        refreshed = time.monotonic()

        took: list[float] = []

        async def legacy_hears(client: Client, heard: Notifications) -> None:
            await wait_for_list(client, heard, lambda names: GONE not in names)
            took.append(time.monotonic() - refreshed)

        async def modern_hears(client: Client, listening: object) -> None:
            async for event in listening:  # type: ignore[attr-defined]
                if isinstance(event, ToolsListChanged):
                    break
            listed = await client.list_tools(cache_mode="refresh")
            assert [t.name for t in listed.tools] == ["mcp__s__tool_0", "mcp__s__tool_1"]
            took.append(time.monotonic() - refreshed)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for client, heard in legacy:
                    tg.start_soon(legacy_hears, client, heard)
                for client, listening in modern:
                    tg.start_soon(modern_hears, client, listening)
        assert len(took) == 4
        assert max(took) < REACH, took
        result = await modern[1][0].call_tool("mcp__s__tool_1", {"q": "hi"})
        assert result.is_error is False

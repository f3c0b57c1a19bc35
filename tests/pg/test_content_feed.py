"""Two real ``pegboard serve --http`` replicas on one PostgreSQL store: resources a client adds
through one replica (its upstream announces them) reach the clients of the other replica, in
both protocol eras, within 2 s: resources/list_changed and prompts/list_changed, then the new
list, read from the store (the other replica's own upstream never listed it)."""

from __future__ import annotations

import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import PromptsListChanged, ResourcesListChanged

from tests.gateway.harness import GATEWAY_SERVERS, write_config
from tests.pg.replicas import replica

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REACH = 2.0
NEW = "pegboard://a/note://shared"


class _Heard:
    """The handshake-era client's resources and prompts list_changed notifications."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.event = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, mcp_types.ResourceListChangedNotification):
            self.kinds.append("resources")
        elif isinstance(message, mcp_types.PromptListChangedNotification):
            self.kinds.append("prompts")
        else:
            return
        self.event.set()


async def _uris(client: Client) -> list[str]:
    return sorted(str(r.uri) for r in (await client.list_resources()).resources)


async def test_content_one_replica_stored_reaches_the_clients_of_another_within_2_s(
    tmp_path: Path, pg_url: str
) -> None:
    server = {"command": sys.executable, "args": [str(GATEWAY_SERVERS / "content.py"), "A"]}
    write_config(tmp_path, {"servers": {"a": server}})
    async with AsyncExitStack() as stack:
        one, two = [
            await stack.enter_async_context(replica(tmp_path, name, pg_url))
            for name in ("one", "two")
        ]
        http = await stack.enter_async_context(
            httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120))
        )
        heard = _Heard()
        legacy = await stack.enter_async_context(
            Client(
                streamable_http_client(one.url, http_client=http),
                mode="legacy",
                message_handler=heard,
            )
        )
        modern = await stack.enter_async_context(
            Client(streamable_http_client(one.url, http_client=http), mode="2026-07-28")
        )
        listening = await stack.enter_async_context(
            modern.listen(resources_list_changed=True, prompts_list_changed=True)
        )
        writer = await stack.enter_async_context(
            Client(streamable_http_client(two.url, http_client=http), mode="2026-07-28")
        )
        with anyio.fail_after(45):  # both replicas have listed their upstream's content once
            for client in (legacy, modern, writer):
                while await _uris(client) != ["pegboard://a/note://readme"]:  # noqa: ASYNC110
                    await anyio.sleep(0.1)
        heard.kinds.clear()
        heard.event = anyio.Event()

        added = await writer.call_tool("mcp__a__add_note", {"name": "shared"})
        assert added.is_error is False
        stored = time.monotonic()
        took: dict[str, float] = {}

        async def legacy_hears() -> None:
            await heard.event.wait()
            took["legacy"] = time.monotonic() - stored

        async def modern_hears() -> None:
            kinds = set()
            async for event in listening:
                if isinstance(event, ResourcesListChanged):
                    kinds.add("resources")
                elif isinstance(event, PromptsListChanged):
                    kinds.add("prompts")
                if kinds == {"resources", "prompts"}:
                    break
            took["modern"] = time.monotonic() - stored

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(legacy_hears)
                tg.start_soon(modern_hears)
        assert max(took.values()) < REACH, took
        for client in (legacy, modern):
            assert await _uris(client) == ["pegboard://a/note://readme", NEW]
        with anyio.fail_after(5):
            while "prompts" not in heard.kinds:  # noqa: ASYNC110
                await anyio.sleep(0.05)

"""Upstream servers of both eras behind ``pegboard serve`` (servers/modern.py, built with the
SDK's ``MCPServer``): a dual-era server is reached with ``initialize`` and its session's
``list_changed`` arrives (on a 2026-07-28 connection the SDK would drop it); a modern-only
server refuses ``initialize``, is reached with ``server/discover`` and its list changes come
through ``subscriptions/listen``; ``protocol = "modern"`` discovers a dual-era server. Its
input-required rounds are refused with a clear error at once (they are not relayed yet)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.subscriptions import Subscription

from tests.gateway.harness import (
    GATEWAY_SERVERS,
    STARTUP_BOUND,
    Notifications,
    serve_stdio,
    text_of,
    wait_for_list,
    write_config,
)

pytestmark = pytest.mark.anyio

SERVERS = {
    "dual": {"command": sys.executable, "args": [str(GATEWAY_SERVERS / "modern.py")]},
    "only": {
        "command": sys.executable,
        "args": [str(GATEWAY_SERVERS / "modern.py"), "--modern-only"],
    },
    "forced": {
        "command": sys.executable,
        "args": [str(GATEWAY_SERVERS / "modern.py")],
        "protocol": "modern",
    },
}


async def _until(client: Client, sub: Subscription, ready: Callable[[list[str]], bool]) -> None:
    """Returns once ``ready(listed names)`` holds, re-listing on each listen event."""
    while not ready([t.name for t in (await client.list_tools(cache_mode="refresh")).tools]):
        await anext(aiter(sub))


async def _prompts(client: Client, count: int) -> list[str]:
    """The listed prompt names once ``count`` are listed (content is listed after tools;
    polled, bounded at 20 s, in either era)."""
    for _ in range(100):
        names = sorted(p.name for p in (await client.list_prompts()).prompts)
        if len(names) >= count:
            break
        await anyio.sleep(0.2)
    return names


@pytest.mark.parametrize("client_mode", ["legacy", "2026-07-28"])
async def test_upstreams_of_both_eras_are_reached_in_theirs_and_their_list_changes_arrive(
    tmp_path: Path, client_mode: str
) -> None:
    write_config(tmp_path, {"servers": SERVERS})
    changes = Notifications()

    async def wait_for(ready: Callable[[list[str]], bool]) -> None:
        if client_mode == "legacy":
            await wait_for_list(client, changes, ready)
        else:
            async with client.listen(tools_list_changed=True) as sub:
                await _until(client, sub, ready)

    async def drop(sid: str, name: str) -> None:
        """Tool NAME removed on server SID, until the change reached the client."""
        with anyio.fail_after(30):
            gone = f"mcp__{sid}__{name}"
            if client_mode == "legacy":
                assert text_of(await client.call_tool(f"mcp__{sid}__drop_tool", {"name": name}))
                await wait_for_list(client, changes, lambda listed: gone not in listed)
                return
            async with client.listen(tools_list_changed=True) as sub:
                assert text_of(await client.call_tool(f"mcp__{sid}__drop_tool", {"name": name}))
                await _until(client, sub, lambda listed: gone not in listed)

    with anyio.fail_after(STARTUP_BOUND + 60):
        async with serve_stdio(
            tmp_path, "--no-defer", notifications=changes, mode=client_mode
        ) as client:
            wanted = [f"mcp__{sid}__spare" for sid in SERVERS]
            await wait_for(lambda listed: all(name in listed for name in wanted))
            eras = {
                sid: text_of(await client.call_tool(f"mcp__{sid}__version", {})) for sid in SERVERS
            }
            prompts = await _prompts(client, len(SERVERS))
            echoed = text_of(await client.call_tool("mcp__only__echo", {"text": "hi"}))
            with anyio.fail_after(10):  # refused at once, never waiting on an answer
                asked = await client.call_tool("mcp__only__confirm", {})
            await drop("dual", "spare")  # session list_changed, handshake era
            await drop("only", "spare")  # subscriptions/listen, 2026-07-28
            listed = [t.name for t in (await client.list_tools()).tools]

    assert eras == {"dual": "2025-11-25", "only": "2026-07-28", "forced": "2026-07-28"}
    assert prompts == sorted(f"mcp__{sid}__hello" for sid in SERVERS)
    assert echoed == "hi"
    assert "mcp__forced__spare" in listed
    assert {"mcp__dual__spare", "mcp__only__spare"}.isdisjoint(listed)
    assert asked.is_error is True
    assert text_of(asked) == (
        "MCP server only asked for input during tool 'confirm' (elicitation/create (form)), "
        "which pegboard does not relay to the client yet; the call did not complete. Call a "
        "tool of that server that needs no input, or use the server directly from a client "
        "that can answer it."
    )

"""``pegboard serve`` for clients of the 2026-07-28 protocol era (sessionless), over stdio and
streamable HTTP, driven by the official SDK ``Client`` in ``auto`` and ``"2026-07-28"`` modes
against real upstream servers: discover, tools, gated calls answered in input-required rounds
(accept, decline, "for a while"), list changes through ``subscriptions/listen``, resources and
prompts. The handshake-era (``legacy``) client is covered by every other gateway test."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged

from tests.gateway.harness import (
    GATEWAY_SERVERS,
    PEGBOARD,
    STARTUP_BOUND,
    gateway_env,
    run_cli,
    scripted_elicitation,
    sdk_server,
    serve_stdio,
    text_of,
    write_config,
)

pytestmark = pytest.mark.anyio

MODES = ["auto", "2026-07-28"]
ECHO = "mcp__toolbox__echo"


def _config(tmp_path: Path) -> None:
    content = {"command": sys.executable, "args": [str(GATEWAY_SERVERS / "content.py"), "A"]}
    toolbox = sdk_server() | {"force_prompt_tools": ["echo"]}
    write_config(tmp_path, {"servers": {"toolbox": toolbox, "a": content}})


@asynccontextmanager
async def _serve_http(tmp_path: Path, mode: str, **client: Any) -> AsyncIterator[Client]:
    args = [PEGBOARD, "serve", "--http", "--port", "0", "--no-defer"]
    async with await anyio.open_process(args, env=gateway_env(tmp_path)) as process:
        assert process.stderr is not None
        seen = b""
        while b"pegboard serving MCP on " not in seen or not seen.endswith(b"\n"):
            seen += await process.stderr.receive()
        url = seen.split(b"pegboard serving MCP on ")[1].split(b"\n")[0].decode()
        try:
            async with (
                # a listen stream is quiet until a change (the SDK pings it every 15 s)
                httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120)) as http,
                Client(streamable_http_client(url, http_client=http), mode=mode, **client) as c,
            ):
                yield c
        finally:
            process.terminate()


async def _exercise(client: Client, tmp_path: Path, asked: list[str]) -> dict[str, Any]:
    """What a modern client sees: calls through rounds, content, and a listened change."""
    seen: dict[str, Any] = {"version": client.protocol_version}
    discover = mcp_types.DiscoverResult.model_validate(
        await client.session.send_discover("2026-07-28")
    )
    caps = discover.capabilities
    seen["discover"] = (discover.supported_versions, caps.tools, caps.prompts, caps.resources)
    listed = await client.list_tools()
    seen["names"] = [t.name for t in listed.tools]
    seen["hint"] = (listed.ttl_ms, listed.cache_scope)
    for decision_text in ("once", "no", "always", "again"):
        result = await client.call_tool(ECHO, {"text": decision_text})
        seen[decision_text] = (result.is_error, text_of(result), len(asked))
    seen["add"] = text_of(await client.call_tool("mcp__toolbox__add", {"a": 2, "b": 3}))
    with anyio.fail_after(60):  # content is listed in the background: wait for its change
        async with client.listen(resources_list_changed=True) as changes:
            while not (resources := (await client.list_resources(cache_mode="refresh")).resources):
                await anext(aiter(changes))
    seen["resources"] = [str(r.uri) for r in resources]
    read = await client.read_resource("pegboard://a/note://readme")
    seen["read"] = [c.text for c in read.contents if isinstance(c, mcp_types.TextResourceContents)]
    got = await client.get_prompt("mcp__a__greet", {"name": "Ada"})
    seen["prompt"] = [
        m.content.text for m in got.messages if isinstance(m.content, mcp_types.TextContent)
    ]
    with anyio.fail_after(60):
        async with client.listen(tools_list_changed=True, prompts_list_changed=True) as sub:
            code, _, _ = await run_cli(tmp_path, "servers", "disable", "toolbox")
            assert code == 0
            async for event in sub:
                if isinstance(event, ToolsListChanged):
                    break
    seen["after"] = [t.name for t in (await client.list_tools()).tools]
    return seen


def _expected() -> dict[str, Any]:
    return {
        "version": "2026-07-28",
        "discover": (
            ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
            mcp_types.ToolsCapability(list_changed=True),
            mcp_types.PromptsCapability(list_changed=True),
            mcp_types.ResourcesCapability(list_changed=True),
        ),
        "names": [
            "mcp__a__add_note",
            "mcp__a__ping",
            "mcp__toolbox__add",
            "mcp__toolbox__crash",
            ECHO,
            "mcp__toolbox__env",
            "mcp__toolbox__fail",
            "mcp__toolbox__grow",
            "mcp__toolbox__media",
            "mcp__toolbox__tool__7794fd8b0a3fa34c",
        ],
        "hint": (2000, "private"),
        "once": (False, "once", 1),
        "no": (
            True,
            f"The user denied the call to {ECHO}; it was not run. Do not retry it unchanged: "
            "ask the user or take another approach.",
            2,
        ),
        "always": (False, "always", 3),
        "again": (False, "again", 4),  # other arguments: asked again
        "add": "5",
        "resources": ["pegboard://a/note://readme"],
        "read": ["readme of A"],
        "prompt": ["Hello Ada from A"],
        "after": ["mcp__a__add_note", "mcp__a__ping"],
    }


@pytest.mark.parametrize("mode", MODES)
async def test_a_modern_client_on_stdio_gets_rounds_for_approval_and_listens_for_changes(
    tmp_path: Path, mode: str
) -> None:
    _config(tmp_path)
    assert (await run_cli(tmp_path, "servers", "refresh"))[0] == 0
    asked: list[str] = []
    answers = ["allow_once", "deny", "allow_session", "allow_once"]
    elicit = scripted_elicitation(answers, asked)

    with anyio.fail_after(STARTUP_BOUND + 60):
        async with serve_stdio(tmp_path, "--no-defer", mode=mode, elicitation=elicit) as client:
            seen = await _exercise(client, tmp_path, asked)

    assert seen == _expected()
    assert asked[0].startswith(f"Allow the tool {ECHO} (mcp:toolbox) to run?")


@pytest.mark.parametrize("mode", MODES)
async def test_a_modern_client_over_http_gets_rounds_for_approval_and_listens_for_changes(
    tmp_path: Path, mode: str
) -> None:
    _config(tmp_path)
    assert (await run_cli(tmp_path, "servers", "refresh"))[0] == 0
    asked: list[str] = []
    answers = ["allow_once", "deny", "allow_session", "allow_once"]
    elicit = scripted_elicitation(answers, asked)

    with anyio.fail_after(STARTUP_BOUND + 60):
        async with _serve_http(tmp_path, mode, elicitation_callback=elicit) as client:
            seen = await _exercise(client, tmp_path, asked)

    assert seen == _expected()


async def test_a_modern_client_that_cannot_elicit_has_a_gated_call_queued_without_a_round(
    tmp_path: Path,
) -> None:
    _config(tmp_path)
    assert (await run_cli(tmp_path, "servers", "refresh"))[0] == 0

    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path, "--no-defer", mode="2026-07-28") as client:
            refused = await client.call_tool(ECHO, {"text": "hi"})

    assert refused.is_error is True
    assert text_of(refused).startswith(
        f"Tool {ECHO} needs a person's approval, and this MCP client cannot ask for it, so "
        "the call waits in pegboard's approvals queue"
    )

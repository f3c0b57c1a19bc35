"""``pegboard serve --http``: streamable HTTP with a bearer token, and a clean SIGTERM shutdown."""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.harness import (
    PEGBOARD,
    STARTUP_BOUND,
    Notifications,
    gateway_env,
    process_gone,
    run_cli,
    sdk_server,
    text_of,
    victim_server,
    wait_for_list,
    wait_for_tools,
    write_config,
)

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token"


async def _served_url(process: Process) -> str:
    assert process.stderr is not None
    buffered = ""
    async for chunk in TextReceiveStream(process.stderr):
        buffered += chunk
        for line in buffered.splitlines():
            if line.startswith("pegboard serving MCP on "):
                return line.removeprefix("pegboard serving MCP on ")
    raise AssertionError(f"pegboard serve exited before serving; stderr: {buffered}")


async def test_http_serving_needs_the_token_notifies_every_client_and_stops_children_on_sigterm(
    tmp_path: Path,
) -> None:
    toolbox = sdk_server() | {"force_prompt_tools": ["echo"]}
    write_config(tmp_path, {"servers": {"toolbox": toolbox, "victim": victim_server()}})
    env = gateway_env(tmp_path) | {"PEGBOARD_TOKEN": TOKEN}
    args = [PEGBOARD, "serve", "--http", "--port", "0", "--no-defer"]
    changes, other_changes = Notifications(), Notifications()

    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(args, env=env) as process:
            url = await _served_url(process)
            assert url.startswith("http://127.0.0.1:")

            async with httpx2.AsyncClient() as anonymous:
                refused = await anonymous.post(url, json={})
            assert refused.status_code == 401

            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(
                    streamable_http_client(url, http_client=http),
                    mode="legacy",
                    message_handler=changes,
                ) as client,
                Client(
                    streamable_http_client(url, http_client=http),
                    mode="legacy",
                    message_handler=other_changes,
                ) as other,
            ):
                await wait_for_tools(client, changes, "mcp__toolbox__echo", "mcp__victim__pid")
                await wait_for_tools(other, other_changes, "mcp__toolbox__echo")
                gated = await client.call_tool("mcp__toolbox__echo", {"text": "hi"})
                added = await client.call_tool("mcp__toolbox__add", {"a": 20, "b": 22})
                victim_pid = int(text_of(await client.call_tool("mcp__victim__pid", {})))

                # Both connected clients hear that a server was disabled in the config.
                code, _, _ = await run_cli(tmp_path, "servers", "disable", "toolbox")
                assert code == 0
                for who, heard in ((client, changes), (other, other_changes)):
                    names = await wait_for_list(
                        who, heard, lambda listed: "mcp__toolbox__add" not in listed
                    )
                    assert names == ["mcp__victim__block", "mcp__victim__pid"]

            assert gated.is_error is True
            assert text_of(gated).startswith(
                "Tool mcp__toolbox__echo needs a person's approval, and this MCP client "
                "cannot ask for it"
            )
            assert text_of(added) == "42"

            process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0
            assert process_gone(victim_pid)

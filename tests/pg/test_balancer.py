"""Three ``pegboard serve --http`` replicas on one PostgreSQL store behind HAProxy round-robin
(no stickiness), driven by the official SDK client: every call answered correctly and run
exactly once (counted at the upstream server and in the audit), a gated call whose approval
rounds land on different replicas runs once, a replica killed between calls costs no call, and
a CLI refresh reaches every replica."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.harness import (
    MCP_SERVERS,
    Notifications,
    scripted_elicitation,
    text_of,
    wait_for_list,
    write_config,
)
from tests.pg.balancer import haproxy, require_haproxy
from tests.pg.replicas import Replica, replica, run_cli_on, shared_audit

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CALLS = 9


def _calls(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


async def _listed(url: str, http: httpx2.AsyncClient) -> list[str]:
    async with Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as c:
        return [t.name for t in (await c.list_tools()).tools]


@dataclass
class _Team:
    replicas: list[Replica]
    url: str  # the balancer's
    http: httpx2.AsyncClient
    calls: Path  # every upstream call, by tool name
    modes: Path  # the upstream's modes (extra: one more tool)


@asynccontextmanager
async def _three_replicas(tmp_path: Path, pg_url: str) -> AsyncIterator[_Team]:
    """Three replicas of one config (server ``s``: tool_0, tool_1 gated, extra_tool) behind
    HAProxy, each having listed the tools."""
    require_haproxy()
    calls, modes = tmp_path / "calls.log", tmp_path / "modes"
    modes.write_text("extra\n")
    args = [str(MCP_SERVERS / "scripted.py"), "--tools", "2", "--call-log", str(calls)]
    server = {
        "command": sys.executable,
        "args": [*args, "--mode-file", str(modes)],
        "force_prompt_tools": ["tool_1"],
    }
    write_config(tmp_path, {"servers": {"s": server}})
    async with AsyncExitStack() as stack:
        replicas = [
            await stack.enter_async_context(replica(tmp_path, name, pg_url))
            for name in ("r0", "r1", "r2")
        ]
        url = stack.enter_context(haproxy(tmp_path, [r.port for r in replicas]))
        http = await stack.enter_async_context(
            httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120))
        )
        with anyio.fail_after(45):  # every replica has listed (or taken) the tools
            for each in replicas:
                while "mcp__s__extra_tool" not in await _listed(each.url, http):  # noqa: ASYNC110
                    await anyio.sleep(0.1)
        yield _Team(replicas, url, http, calls, modes)


async def test_three_replicas_behind_round_robin_answer_every_call_once(
    tmp_path: Path, pg_url: str
) -> None:
    asked: list[str] = []
    async with AsyncExitStack() as stack:
        team = await stack.enter_async_context(_three_replicas(tmp_path, pg_url))
        replicas, url, http, calls = team.replicas, team.url, team.http, team.calls
        modes = team.modes
        client = await stack.enter_async_context(
            Client(
                streamable_http_client(url, http_client=http),
                mode="2026-07-28",
                elicitation_callback=scripted_elicitation(["allow_once"], asked),
            )
        )
        for i in range(CALLS):
            result = await client.call_tool("mcp__s__tool_0", {"q": f"call {i}"})
            assert (result.is_error, text_of(result)) == (False, f'tool_0:{{"q": "call {i}"}}')

        # A gated call: the ask and the answer are two requests, so two replicas.
        gated = await client.call_tool("mcp__s__tool_1", {"q": "gated"})
        assert gated.is_error is False
        assert len(asked) == 1

        # A replica killed between calls: HAProxy sends the next calls elsewhere.
        os.kill(replicas[0].process.pid, signal.SIGKILL)
        await replicas[0].process.wait()
        for i in range(CALLS):
            result = await client.call_tool("mcp__s__tool_0", {"q": f"after {i}"})
            assert result.is_error is False, text_of(result)

        # A refresh on another machine reaches the replicas still up (extra_tool is gone).
        modes.write_text("")
        code, _, stderr = await run_cli_on(tmp_path, "laptop", pg_url, "servers", "refresh", "s")
        assert code == 0, stderr
        with anyio.fail_after(2):
            for each in replicas[1:]:
                while "mcp__s__extra_tool" in await _listed(each.url, http):  # noqa: ASYNC110
                    await anyio.sleep(0.05)

    executed = _calls(calls)
    assert executed.count("tool_0") == 2 * CALLS
    assert executed.count("tool_1") == 1
    audit = await shared_audit(tmp_path, pg_url)
    ran = [r["tool"] for r in audit if r["outcome"] == "ok"]
    legs = {r["outcome"]: r["replica"] for r in audit if r["tool"] == "mcp__s__tool_1"}
    assert set(legs) == {"ApprovalPending", "ok"}
    assert legs["ApprovalPending"] != legs["ok"]  # asked on one replica, run on another
    assert sorted(ran) == ["mcp__s__tool_0"] * (2 * CALLS) + ["mcp__s__tool_1"]


async def test_a_handshake_era_client_needs_no_sticky_balancer(tmp_path: Path, pg_url: str) -> None:
    """The legacy client's session id opens on every replica; the answer to an approval
    asked on one replica reaches it through the store; a replica killed between calls costs
    no call (and none runs twice); a CLI refresh reaches the replica holding the client's
    notification stream."""
    asked: list[str] = []
    heard = Notifications()
    async with AsyncExitStack() as stack:
        team = await stack.enter_async_context(_three_replicas(tmp_path, pg_url))
        url, http, calls, modes = team.url, team.http, team.calls, team.modes
        replicas = team.replicas
        client = await stack.enter_async_context(
            Client(
                streamable_http_client(url, http_client=http),
                mode="legacy",
                message_handler=heard,
                elicitation_callback=scripted_elicitation(["allow_once"], asked),
            )
        )
        for i in range(CALLS):
            result = await client.call_tool("mcp__s__tool_0", {"q": f"call {i}"})
            assert (result.is_error, text_of(result)) == (False, f'tool_0:{{"q": "call {i}"}}')
        with anyio.fail_after(30):
            gated = await client.call_tool("mcp__s__tool_1", {"q": "gated"})
        assert (gated.is_error, len(asked)) == (False, 1), text_of(gated)

        # Replicas killed between calls, one then another (whichever held the notification
        # stream among them): the session is revived by those left, the stream reopened.
        for killed in (replicas[2], replicas[1]):
            os.kill(killed.process.pid, signal.SIGKILL)
            await killed.process.wait()
            for i in range(CALLS):
                result = await client.call_tool("mcp__s__tool_0", {"q": f"{killed.name} {i}"})
                expected = f'tool_0:{{"q": "{killed.name} {i}"}}'
                assert (result.is_error, text_of(result)) == (False, expected)

        modes.write_text("")
        code, _, stderr = await run_cli_on(tmp_path, "laptop", pg_url, "servers", "refresh", "s")
        assert code == 0, stderr
        with anyio.fail_after(2):
            await wait_for_list(client, heard, lambda names: "mcp__s__extra_tool" not in names)

    executed = _calls(calls)
    assert (executed.count("tool_0"), executed.count("tool_1")) == (3 * CALLS, 1)
    audit = await shared_audit(tmp_path, pg_url)
    ran = [r["tool"] for r in audit if r["outcome"] == "ok"]
    assert sorted(ran) == ["mcp__s__tool_0"] * (3 * CALLS) + ["mcp__s__tool_1"]
    assert {r["replica"] for r in audit} == {"r0", "r1", "r2"}  # every replica served some

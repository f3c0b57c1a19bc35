"""Per-principal access and rate limits on ``pegboard serve --http`` with real OAuth tokens.

The real provider (npm ``oidc-provider``, :mod:`tests.gateway.auth.idp`) issues tokens to
alice (group ``ops``), bob (group ``dev``) and carol (no group). ``[[auth.allow]]`` gives ops
every server, dev the tools ``add`` and ``echo`` of ``toolbox`` only, carol nothing. Two
gateways run: one listing every tool (``--no-defer``) and one deferring them behind the
meta-tools with ``tool_exec`` on. A tool a principal may not use must be absent from its
``tools/list`` and ``tool_search``, and unknown on every route whatever the spelling.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pegboard.calls.audit_log import AUDIT_FILE
from pegboard.core.names import legacy_mcp_tool_name
from tests.gateway.auth.idp import Idp, free_port, require_provider, running_idp
from tests.gateway.auth.test_oauth import start_gateway
from tests.gateway.harness import (
    ROOT,
    STARTUP_BOUND,
    Notifications,
    read_audit,
    sdk_server,
    text_of,
    wait_for_tools,
)

pytestmark = pytest.mark.anyio

CONTENT = ROOT / "tests" / "gateway" / "servers" / "content.py"
ECHO_PER_MINUTE = 3
ALICE_TOOLS = {
    "mcp__toolbox__add",
    "mcp__toolbox__echo",
    "mcp__toolbox__env",
    "mcp__my-notes__ping",
}
BOB_TOOLS = {"mcp__toolbox__add", "mcp__toolbox__echo"}
MODES = ("legacy", "2026-07-28")


def config(issuer: str, audience: str, *, defer: bool) -> dict[str, Any]:
    return {
        "context_window": 2000 if defer else 200000,
        "meta": {"tool_exec": defer, "search": "lexical", "defer": defer},
        "servers": {
            "toolbox": sdk_server("--tools", "30") if defer else sdk_server(),
            "my-notes": {"command": sys.executable, "args": [str(CONTENT), "A"]},
        },
        "auth": {
            "issuer": issuer,
            "audience": audience,
            "admins": ["group:ops"],
            "allow": [
                {"subjects": ["group:ops"]},
                {"subjects": ["group:dev"], "servers": ["toolbox"], "tools": ["add", "echo"]},
            ],
        },
        "limits": {"per_tool": {"mcp__toolbox__echo": ECHO_PER_MINUTE}},
    }


@dataclass
class Gateway:
    url: str
    data: Path
    process: subprocess.Popen[str]
    listing: bool  # every tool listed (else deferred behind the meta-tools)

    def audit(self, until: Callable[[list[dict[str, Any]]], bool] = bool) -> list[dict[str, Any]]:
        """The gateway's audit records, once ``until`` holds for them (10 s at most): the sink
        writes in batches off the loop, so the last answer's record may land just after it."""
        return read_audit(self.data / AUDIT_FILE, lambda records: bool(records) and until(records))


def start(tmp_path: Path, idp: Idp, *, defer: bool) -> Gateway:
    port = free_port()
    gateway_config = config(idp.issuer, f"http://127.0.0.1:{port}/mcp", defer=defer)
    process, url, _ = start_gateway(tmp_path, gateway_config, port, ("--log-level", "warning"))
    return Gateway(url, tmp_path / "data", process, not defer)


@dataclass
class Served:
    idp: Idp
    listed: Gateway
    deferred: Gateway
    tokens: dict[str, str]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    require_provider()
    # The audience is per gateway: the provider issues tokens for whichever is asked.
    with running_idp("http://127.0.0.1:1/unused") as idp:
        listed = start(tmp_path_factory.mktemp("listed"), idp, defer=False)
        deferred = start(tmp_path_factory.mktemp("deferred"), idp, defer=True)
        try:
            yield Served(idp, listed, deferred, {})
        finally:
            for gateway in (listed, deferred):
                gateway.process.terminate()
                gateway.process.wait(timeout=15)


def token(served: Served, who: str, gateway: Gateway) -> str:
    key = f"{who} {gateway.url}"
    if key not in served.tokens:
        served.tokens[key] = served.idp.token(who, audience=gateway.url)
    return served.tokens[key]


@asynccontextmanager
async def client_of(
    served: Served, who: str, gateway: Gateway, mode: str = "legacy"
) -> AsyncIterator[Client]:
    headers = {"authorization": f"Bearer {token(served, who, gateway)}"}
    changes = Notifications()
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(
            streamable_http_client(gateway.url, http_client=http),
            mode=mode,  # type: ignore[arg-type]
            message_handler=changes if mode == "legacy" else None,
        ) as client,
    ):
        if mode == "legacy" and who == "alice":
            wanted = ALICE_TOOLS if gateway.listing else {"tool_search"}
            with anyio.fail_after(STARTUP_BOUND):  # the upstreams warm after start
                await wait_for_tools(client, changes, *sorted(wanted))
        yield client


async def tool_names(served: Served, who: str, gateway: Gateway, mode: str = "legacy") -> set[str]:
    async with client_of(served, who, gateway, mode) as client:
        return {t.name for t in (await client.list_tools()).tools}


async def test_each_principal_lists_only_the_tools_its_rules_give_it(served: Served) -> None:
    gateway = served.listed
    alice = await tool_names(served, "alice", gateway)
    assert alice >= ALICE_TOOLS
    for mode in MODES:
        assert await tool_names(served, "bob", gateway, mode) == BOB_TOOLS
        assert await tool_names(served, "carol", gateway, mode) == set()
    assert await tool_names(served, "alice", gateway, "2026-07-28") == alice


FORBIDDEN_SPELLINGS = [
    "mcp__toolbox__env",  # a tool of an allowed server, not allowed itself
    "MCP__TOOLBOX__ENV",  # case variant
    "mcp__my-notes__ping",  # a server bob may not use
    legacy_mcp_tool_name("my-notes", "ping"),  # its pre-hyphen wire name
    "mcp__my_notes__ping",  # a look-alike
]


@pytest.mark.parametrize("mode", MODES)
async def test_a_forbidden_tool_is_unknown_by_any_spelling_and_audited(
    served: Served, mode: str
) -> None:
    gateway = served.listed
    async with client_of(served, "alice", gateway):
        pass  # the upstreams are listed
    async with client_of(served, "bob", gateway, mode) as bob:
        assert text_of(await bob.call_tool("mcp__toolbox__add", {"a": 2, "b": 3})) == "5"
        for name in FORBIDDEN_SPELLINGS:
            result = await bob.call_tool(name, {"name": "HOME"})
            assert result.is_error, name
            assert text_of(result).startswith(f"Tool not found: {name}."), text_of(result)
            assert "env" not in text_of(result).replace(name, ""), "a hidden tool was suggested"
    async with client_of(served, "alice", gateway, mode) as alice:
        assert text_of(await alice.call_tool("mcp__my-notes__ping", {})) == "pong"
    records = [r for r in gateway.audit() if r["principal"] == "bob"]
    refused = {r["tool"] for r in records if r["outcome"] == "ToolNotFound"}
    assert set(FORBIDDEN_SPELLINGS) <= refused
    assert all(token(served, "bob", gateway) not in json.dumps(r) for r in gateway.audit())


async def test_resources_and_prompts_follow_the_servers_a_principal_may_use(
    served: Served,
) -> None:
    gateway = served.listed
    async with client_of(served, "alice", gateway) as alice:
        resources = [str(r.uri) for r in (await alice.list_resources()).resources]
        prompts = [p.name for p in (await alice.list_prompts()).prompts]
        assert "pegboard://my-notes/note://readme" in resources
        assert "mcp__my-notes__greet" in prompts
        read = await alice.read_resource("pegboard://my-notes/note://readme")
        assert "readme of A" in str(read.contents[0])
    async with client_of(served, "bob", gateway) as bob:
        assert (await bob.list_resources()).resources == []
        assert (await bob.list_prompts()).prompts == []
        with pytest.raises(Exception, match="Resource not found"):
            await bob.read_resource("pegboard://my-notes/note://readme")
        with pytest.raises(Exception, match="Prompt not found"):
            await bob.get_prompt("mcp__my-notes__greet", {"name": "x"})
    wanted = {"pegboard://my-notes/note://readme", "mcp__my-notes__greet"}

    def refused_of_bob(records: list[dict[str, Any]]) -> set[str]:
        return {r["tool"] for r in records if r["principal"] == "bob" and r["outcome"] != "ok"}

    assert wanted <= refused_of_bob(gateway.audit(lambda rs: wanted <= refused_of_bob(rs)))


async def test_a_per_tool_limit_bites_at_its_rate_and_spares_other_principals(
    served: Served,
) -> None:
    gateway = served.listed
    async with client_of(served, "alice", gateway):
        pass
    async with client_of(served, "bob", gateway) as bob:
        texts = [
            text_of(await bob.call_tool("mcp__toolbox__echo", {"text": "hi"})) for _ in range(4)
        ]
        started = time.monotonic()
        limited = await bob.call_tool("mcp__toolbox__echo", {"text": "hi"})
        assert time.monotonic() - started < 5  # refused at once, never queued
        assert text_of(await bob.call_tool("mcp__toolbox__add", {"a": 1, "b": 1})) == "2"
    assert texts[:ECHO_PER_MINUTE] == ["hi"] * ECHO_PER_MINUTE
    assert texts[ECHO_PER_MINUTE].startswith(
        f"rate limit reached: {ECHO_PER_MINUTE} calls of mcp__toolbox__echo per minute; "
        "retry after "
    )
    assert limited.is_error
    assert "retry after" in text_of(limited)
    async with client_of(served, "alice", gateway) as alice:
        assert text_of(await alice.call_tool("mcp__toolbox__echo", {"text": "ok"})) == "ok"
    bob_echoes = [
        r["outcome"]
        for r in gateway.audit()
        if r["principal"] == "bob" and r["tool"] == "mcp__toolbox__echo"
    ]
    assert bob_echoes.count("RateLimited") >= 2


def structured(result: mcp_types.CallToolResult) -> Any:
    assert result.structured_content is not None, text_of(result)
    return result.structured_content


async def test_search_inspect_invoke_and_exec_see_only_the_principals_tools(
    served: Served,
) -> None:
    gateway = served.deferred
    async with client_of(served, "alice", gateway) as alice:
        with anyio.fail_after(STARTUP_BOUND):  # the upstreams warm after start
            while True:  # the deferred pool grows as each upstream is listed
                page = structured(await alice.call_tool("tool_search", {"limit": 50}))
                if {t["name"] for t in page["tools"]} >= ALICE_TOOLS:
                    break
                await anyio.sleep(0.5)  # a listing has no change event here
        found = structured(await alice.call_tool("tool_search", {"query": "environment variable"}))
        assert "mcp__toolbox__env" in {t["name"] for t in found["tools"]}
        browsed = structured(await alice.call_tool("tool_search", {"limit": 50}))
        assert {t["name"] for t in browsed["tools"]} >= ALICE_TOOLS
    async with client_of(served, "bob", gateway) as bob:
        listed = {t.name for t in (await bob.list_tools()).tools}
        assert listed <= {"tool_search", "tool_inspect", "tool_invoke", "tool_exec"}
        found = structured(await bob.call_tool("tool_search", {"query": "environment variable"}))
        assert "mcp__toolbox__env" not in {t["name"] for t in found["tools"]}
        browsed = structured(await bob.call_tool("tool_search", {"limit": 50}))
        assert {t["name"] for t in browsed["tools"]} == BOB_TOOLS
        assert browsed["total"] == len(BOB_TOOLS)
        for name in FORBIDDEN_SPELLINGS:
            inspected = await bob.call_tool("tool_inspect", {"name": name})
            assert inspected.is_error, name
            assert "Tool not found" in text_of(inspected), name
            invoked = await bob.call_tool("tool_invoke", {"name": name, "params": {"name": "HOME"}})
            assert invoked.is_error, name
            assert "Tool not found" in text_of(invoked), name
        invoked = await bob.call_tool(
            "tool_invoke", {"name": "mcp__toolbox__add", "params": {"a": 4, "b": 5}}
        )
        assert text_of(invoked) == "9"
        code = "await mcp__toolbox__env(name='HOME')"
        executed = await bob.call_tool("tool_exec", {"code": code})
        assert "failed" in text_of(executed), text_of(executed)
        assert "<unset>" not in text_of(executed)
        assert "/root" not in text_of(executed)
        ok = await bob.call_tool("tool_exec", {"code": "await mcp__toolbox__add(a=1, b=2)"})
        assert "3" in text_of(ok), text_of(ok)
        # tool_invoke of echo takes from echo's bucket: the limit is not escaped that way
        outcomes = [
            await bob.call_tool(
                "tool_invoke", {"name": "mcp__toolbox__echo", "params": {"text": "x"}}
            )
            for _ in range(ECHO_PER_MINUTE + 1)
        ]
        assert [text_of(o) for o in outcomes[:ECHO_PER_MINUTE]] == ["x"] * ECHO_PER_MINUTE
        assert "rate limit reached" in text_of(outcomes[-1])
    limited = ("tool_invoke", "mcp__toolbox__echo", "RateLimited")

    def inner_of_bob(records: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
        return {(r["via"], r["tool"], r["outcome"]) for r in records if r["principal"] == "bob"}

    inner = inner_of_bob(gateway.audit(lambda rs: limited in inner_of_bob(rs)))
    assert limited in inner
    assert ("tool_invoke", "mcp__toolbox__add", "ok") in inner


async def test_the_instructions_name_only_what_the_caller_may_use(served: Served) -> None:
    """The deferred-tools section names tools and servers: a modern client's comes from
    server/discover, for its principal; a handshake's is built before the caller is known, so
    under access rules it names none."""
    gateway = served.deferred
    async with client_of(served, "alice", gateway) as alice:  # waits until the pool is full
        handshake = alice.instructions or ""
    async with client_of(served, "alice", gateway, mode="auto") as alice_modern:
        alice_sees = alice_modern.instructions or ""
    async with client_of(served, "bob", gateway, mode="auto") as bob_modern:
        bob_sees = bob_modern.instructions or ""
    assert "mcp__toolbox__env" in alice_sees
    assert "tool_search" in bob_sees
    assert "mcp__toolbox__env" not in bob_sees
    assert "mcp__toolbox__add" in bob_sees
    assert "mcp__toolbox__" not in handshake

"""Attack: reach a gated or disabled tool around approval through the real gateway
(security.md section 3), and change gates while serving (issue 14 item 3).

A real ``pegboard serve`` over stdio, a real MCP client, a real upstream (the scripted server
logs every ``tools/call`` it receives: a refused call must leave no line there).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types
import pytest
import tomli_w
from mcp.client.context import ClientRequestContext

from tests.cli.conftest import Invoke, warm_cache, write
from tests.gateway.harness import (
    PEGBOARD,
    STARTUP_BOUND,
    Notifications,
    gateway_env,
    run_cli,
    scripted_server,
    serve_stdio,
    serving_url,
    text_of,
    wait_for_list,
    wait_for_tools,
    write_config,
)

pytestmark = pytest.mark.anyio

GATED = "mcp__box__tool_0"
NEAR_MISSES = [
    "MCP__BOX__TOOL_0",
    "box.tool_0",
    "box/tool_0",
    "tool_0",
    f"{GATED} ",
    "mcp__box__tооl_0",  # Cyrillic о
    "mcp__box__tool_0\u200b",
]


def _calls(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [line for line in log.read_text().splitlines() if line == "tools/call"]


def _config(tmp_path: Path, **box: Any) -> dict[str, Any]:
    server = scripted_server("--log", str(tmp_path / "log"))
    return {"servers": {"box": server | box}}


async def test_no_route_reaches_a_gated_tool_around_the_users_denial(tmp_path: Path) -> None:
    write_config(tmp_path, _config(tmp_path, force_prompt_tools=["tool_0"]))
    asked: list[str] = []

    async def deny(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"decision": "deny"})

    changes = Notifications()
    results: dict[str, mcp_types.CallToolResult] = {}
    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path, elicitation=deny, notifications=changes) as client:
            await wait_for_tools(client, changes, GATED)
            results["direct"] = await client.call_tool(GATED, {"q": "rm -rf"})
            results["tool_invoke"] = await client.call_tool(
                "tool_invoke", {"name": GATED, "params": {"q": "rm -rf"}}
            )
            results["nested"] = await client.call_tool(
                "tool_invoke",
                {"name": "tool_invoke", "params": {"name": GATED, "params": {"q": "x"}}},
            )
            for i, name in enumerate(NEAR_MISSES):
                results[f"near-{i}"] = await client.call_tool(name, {"q": "x"})
                results[f"invoke-near-{i}"] = await client.call_tool(
                    "tool_invoke", {"name": name, "params": {"q": "x"}}
                )
            ungated = await client.call_tool("mcp__box__tool_1", {"q": "fine"})

    assert all(r.is_error for r in results.values()), {
        k: text_of(r) for k, r in results.items() if not r.is_error
    }
    assert len(asked) == 1  # only the direct call asks; the user said no
    assert GATED in asked[0]
    assert not ungated.is_error
    assert len(_calls(tmp_path / "log")) == 1  # the ungated call only


async def test_gates_edited_while_serving_take_effect_live(tmp_path: Path) -> None:
    config_path = write_config(tmp_path, _config(tmp_path))
    changes = Notifications()
    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path, "--no-defer", notifications=changes) as client:
            await wait_for_tools(client, changes, "mcp__box__tool_0", "mcp__box__tool_2")
            edited = _config(tmp_path, disabled_tools=["tool_2"], force_prompt_tools=["tool_0"])
            config_path.write_text(tomli_w.dumps(edited), encoding="utf-8")
            await wait_for_list(client, changes, lambda names: "mcp__box__tool_2" not in names)
            hidden = await client.call_tool("mcp__box__tool_2", {"q": "x"})
            gated = await client.call_tool(GATED, {"q": "x"})  # no elicitation: refused

    assert hidden.is_error
    assert gated.is_error
    assert _calls(tmp_path / "log") == []


async def test_a_server_removed_while_serving_is_disabled_at_once(tmp_path: Path) -> None:
    config_path = write_config(tmp_path, _config(tmp_path))
    changes = Notifications()
    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path, "--no-defer", notifications=changes) as client:
            await wait_for_tools(client, changes, GATED)
            config_path.write_text(tomli_w.dumps({"servers": {}}), encoding="utf-8")
            await wait_for_list(client, changes, lambda names: GATED not in names)
            refused = await client.call_tool(GATED, {"q": "x"})

    assert refused.is_error
    assert _calls(tmp_path / "log") == []


@pytest.mark.parametrize(
    "gate",
    [
        {"profiles": {"default": {"disabled_tools": ["mcp__box__tool_0"]}}},
        {"profiles": {"default": {"disabled_tools": ["box/tool_0"]}}},
        {"server": {"disabled_tools": ["tool_0"]}},
    ],
    ids=["profile-wire-name", "profile-server-slash-tool", "server-level"],
)
def test_the_cli_never_runs_a_disabled_tool(
    invoke: Invoke, config_path: Path, tmp_path: Path, gate: dict[str, Any]
) -> None:
    log = tmp_path / "log"
    box = scripted_server("--log", str(log)) | gate.get("server", {})
    write(config_path, {"servers": {"box": box}} | {k: v for k, v in gate.items() if k != "server"})
    tools = [{"name": f"tool_{i}", "inputSchema": {"type": "object"}} for i in range(2)]
    warm_cache(config_path, "box", tools)

    refused = invoke("tools", "call", GATED, '{"q": "x"}', "--yes")
    allowed = invoke("tools", "call", "mcp__box__tool_1", '{"q": "x"}', "--yes")
    records = json.loads(invoke("audit", "tail", "--json").stdout)

    assert refused.exit_code == 3
    assert allowed.exit_code == 0
    assert len(_calls(log)) == 1  # tool_1 only
    assert [r["tool"] for r in records] == [GATED, "mcp__box__tool_1"]
    assert records[0]["outcome"] in ("ToolNotAllowed", "ToolNotFound")  # hidden or unregistered
    assert records[1]["outcome"] == "ok"


async def test_a_client_that_cannot_be_asked_reaches_no_gated_tool_on_the_read_once_route(
    tmp_path: Path,
) -> None:
    """The route a raw client's plain ``tools/call`` takes (no elicitation capability: the
    stdio fast path, the answer read once): the gate holds on every spelling, and the
    refusal of the direct call names the fix."""
    await _gated_box(tmp_path)
    answers: list[dict[str, Any]] = []
    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process([PEGBOARD, "serve"], env=gateway_env(tmp_path)) as p:
            assert p.stdin is not None
            assert p.stdout is not None
            buffer = b""

            async def ask(request_id: int, method: str, params: Any = None) -> dict[str, Any]:
                nonlocal buffer
                assert p.stdin is not None
                assert p.stdout is not None
                message = {"jsonrpc": "2.0", "id": request_id, "method": method}
                await p.stdin.send(json.dumps(message | {"params": params or {}}).encode() + b"\n")
                while True:
                    while b"\n" not in buffer:
                        buffer += await p.stdout.receive()
                    line, buffer = buffer.split(b"\n", 1)
                    got: dict[str, Any] = json.loads(line)
                    if got.get("id") == request_id and "method" not in got:
                        return got

            await ask(1, "initialize", RAW_INIT)
            await p.stdin.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            assert GATED in json.dumps(await ask(2, "tools/list"))
            for index, params in enumerate(RAW_CALLS):
                answers.append((await ask(10 + index, "tools/call", params))["result"])
            await p.stdin.aclose()
    _only_the_ungated_call_ran(tmp_path, answers)


async def test_a_client_that_cannot_be_asked_reaches_no_gated_tool_on_the_http_fast_path(
    tmp_path: Path,
) -> None:
    """The same calls on an established streamable-HTTP session of a client that cannot
    elicit: the HTTP fast path answers them (one JSON body each, not the SDK's event stream)
    through the same gate."""
    await _gated_box(tmp_path)
    answers: list[dict[str, Any]] = []
    args = [PEGBOARD, "serve", "--http", "--port", "0", "--no-defer"]
    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(args, env=gateway_env(tmp_path)) as p:
            try:
                url = await serving_url(p)
                headers = {
                    "accept": "application/json, text/event-stream",
                    "content-type": "application/json",
                }
                async with httpx.AsyncClient(timeout=30) as http:

                    async def post(message: dict[str, Any]) -> httpx.Response:
                        body = json.dumps({"jsonrpc": "2.0", **message})
                        return await http.post(url, content=body, headers=headers)

                    opened = await post({"id": 1, "method": "initialize", "params": RAW_INIT})
                    headers["mcp-session-id"] = opened.headers["mcp-session-id"]
                    headers["mcp-protocol-version"] = "2025-11-25"
                    assert (await post({"method": "notifications/initialized"})).status_code == 202
                    for index, params in enumerate(RAW_CALLS):
                        answer = await post(
                            {"id": 10 + index, "method": "tools/call", "params": params}
                        )
                        assert answer.headers["content-type"] == "application/json", answer.text
                        answers.append(answer.json()["result"])
            finally:
                p.terminate()
    _only_the_ungated_call_ran(tmp_path, answers)


RAW_INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "0"},
}
RAW_CALLS: list[dict[str, Any]] = [
    {"name": GATED, "arguments": {"q": "rm -rf"}},
    {"name": "tool_invoke", "arguments": {"name": GATED, "params": {"q": "rm -rf"}}},
    *({"name": name, "arguments": {"q": "x"}} for name in NEAR_MISSES),
    {"name": "mcp__box__tool_1", "arguments": {"q": "fine"}},
]


async def _gated_box(tmp_path: Path) -> None:
    write_config(tmp_path, _config(tmp_path, force_prompt_tools=["tool_0"]))
    await run_cli(tmp_path, "servers", "refresh")
    (tmp_path / "log").unlink()  # the refresh's lines


def _only_the_ungated_call_ran(tmp_path: Path, answers: list[dict[str, Any]]) -> None:
    """Every call of :data:`RAW_CALLS` but the last refused (the fix named), the last run."""
    *refused, ungated = answers
    assert all(r["isError"] for r in refused), [r for r in refused if not r["isError"]]
    assert "force_prompt_tools" in refused[0]["content"][0]["text"]
    assert ungated == {
        "content": [{"type": "text", "text": 'tool_1:{"q": "fine"}'}],
        "isError": False,
    }
    assert len(_calls(tmp_path / "log")) == 1  # the ungated call only

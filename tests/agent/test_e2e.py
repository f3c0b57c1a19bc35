"""End to end: 300 tools from two real MCP servers, a 32k-context model, scripted model turns.

One server is the stdlib scripted server over stdio (150 tools, logs every request), the other
the official-SDK server over streamable HTTP on 127.0.0.1 (142 generated + 8 fixed tools).
The model's turns are scripted as provider messages; everything else is real: catalog,
sync, deferral, the meta-tools, the dispatcher and the MCP calls.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

from pegboard.agent.params import AgentSession, build_agent_params
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ModelInfo, ToolApplyScope
from pegboard.errors import PegboardError
from pegboard.mcp import McpCatalog, McpServerConfig, sync_mcp_tools_to_registry
from pegboard.mcp.status import namespace_statuses

SERVERS = Path(__file__).resolve().parents[1] / "mcp" / "servers"


def load_sdk_server() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sdk_server", SERVERS / "sdk_server.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@asynccontextmanager
async def http_server(tool_count: int) -> AsyncIterator[str]:
    """The official-SDK test server over streamable HTTP on 127.0.0.1, in this process.

    The socket listens before uvicorn starts, so clients queue instead of racing start-up.
    """
    import uvicorn

    app = load_sdk_server().build(tool_count, "web").streamable_http_app(host="127.0.0.1")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        finally:
            server.should_exit = True
    sock.close()


def servers(url: str, log: Path) -> list[McpServerConfig]:
    timeouts = {"connect_timeout": 10.0, "list_timeout": 5.0, "call_timeout": 5.0}
    files = McpServerConfig(
        id="files",
        name="Files",
        command=sys.executable,
        args=[str(SERVERS / "scripted.py"), "--tools", "150", "--log", str(log)],
        **timeouts,
    )
    web = McpServerConfig(id="web", name="Web Tools", url=url, **timeouts)
    return [files, web]


def chat_turn(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


@pytest.mark.anyio
async def test_a_32k_model_searches_inspects_and_invokes_a_deferred_mcp_tool(
    tmp_path: Path,
) -> None:
    log = tmp_path / "files.log"
    registry = ToolRegistry()
    async with (
        http_server(142) as url,
        McpCatalog(servers(url, log)).running(prewarm=False) as catalog,
    ):
        with anyio.fail_after(20):
            await catalog.refresh_tools("files")
            await catalog.refresh_tools("web")
        report = sync_mcp_tools_to_registry(registry, catalog)
        assert len(report.registered) == 300
        scope = ToolApplyScope(mcp_tool_ids=frozenset(report.registered))
        session = AgentSession()
        gpt = build_agent_params(
            registry, scope, ModelInfo("gpt", "openai", 32_000), session=session
        )
        assert [t["function"]["name"] for t in gpt.tools] == [
            "tool_search",
            "tool_inspect",
            "tool_invoke",
        ]
        assert len(gpt.exposition.deferred) == 300
        assert (
            "- mcp:Files (150): mcp__files__tool_0, mcp__files__tool_1, mcp__files__tool_10, "
            "mcp__files__tool_100, …"
        ) in gpt.system_prompt
        assert "- mcp:Web Tools (150):" in gpt.system_prompt

        # Turn 1: the model searches; it reads the first hit's name off the text.
        [found] = await gpt.dispatcher.respond(
            chat_turn("c1", "tool_search", {"query": "convert currency amounts"})
        )
        lines = found["content"].splitlines()
        assert lines[0] == "[mcp:Web Tools]"
        name = lines[1].removeprefix("- ").split(":")[0]
        assert name.startswith("mcp__web__web_")
        assert "convert currency amounts" in lines[1]

        # Turn 2: inspect; turn 3: invoke through the dispatcher; the real server answers.
        [stub] = await gpt.dispatcher.respond(chat_turn("c2", "tool_inspect", {"name": name}))
        assert "@param {string} params.query" in stub["content"]
        args = {"name": name, "params": {"query": "100 EUR to USD", "limit": 2}}
        with anyio.fail_after(10):
            [result] = await gpt.dispatcher.respond(chat_turn("c3", "tool_invoke", args))
        tool = name.removeprefix("mcp__web__")
        assert result == {
            "role": "tool",
            "tool_call_id": "c3",
            "content": f"{tool}:100 EUR to USD:2",
        }

        # The same conversation against Anthropic, invoking a tool of the stdio server.
        claude = build_agent_params(
            registry, scope, ModelInfo("claude", "anthropic", 32_000), session=session
        )
        assert [t["name"] for t in claude.tools] == ["tool_search", "tool_inspect", "tool_invoke"]
        use = {
            "type": "tool_use",
            "id": "tu1",
            "name": "tool_invoke",
            "input": {"name": "mcp__files__tool_42", "params": {"q": "hello"}},
        }
        with anyio.fail_after(10):
            [message] = await claude.dispatcher.respond({"role": "assistant", "content": [use]})
    assert message == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "tu1",
                "content": [{"type": "text", "text": 'tool_42:{"q": "hello"}'}],
            }
        ],
    }
    assert log.read_text().split().count("tools/call") == 1


@pytest.mark.anyio
async def test_a_failing_server_is_shown_to_the_model_as_failing(tmp_path: Path) -> None:
    log = tmp_path / "files.log"
    files = servers("http://127.0.0.1:9/unused", log)[0]
    broken = McpServerConfig(
        id="broken-id",
        name="Broken",
        command=sys.executable,
        args=[str(SERVERS / "scripted.py"), "--mode", "exit"],
        connect_timeout=2.0,
        list_timeout=2.0,
    )
    registry = ToolRegistry()
    async with McpCatalog([files, broken]).running(prewarm=False) as catalog:
        with anyio.fail_after(10):
            await catalog.refresh_tools("files")
            with pytest.raises(PegboardError):
                await catalog.refresh_tools("broken-id")
        report = sync_mcp_tools_to_registry(registry, catalog)
        statuses = namespace_statuses(catalog.statuses())
    scope = ToolApplyScope(mcp_tool_ids=frozenset(report.registered))
    params = build_agent_params(
        registry, scope, ModelInfo("gpt", "openai", 32_000), statuses=statuses
    )
    [line] = [ln for ln in params.system_prompt.splitlines() if "Broken" in ln]
    assert line.startswith("- mcp:Broken: server failing: server process exited with code 1")
    assert line.endswith("; its tools may be missing")
    assert "broken-id" not in params.system_prompt
    assert "mcp:Files (150)" in params.system_prompt

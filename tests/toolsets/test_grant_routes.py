"""One grant scenario on every route: "allow for this session", then the same call directly
and through ``tool_invoke``, then a call whose arguments do not parse.

Every route must ask once, run the tool three times, refuse the unparsable call, and leave one
audit record per execution with the same outcome. In-process routes (the library dispatcher,
``pegboard chat``'s loop, each framework integration) drive a scripted model server; the
gateway routes run ``pegboard serve`` (stdio and streamable HTTP) with an MCP client that
answers elicitation; ``pegboard tools call`` runs on a real pseudo-terminal (its session is one
command: a second command is asked again).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pegboard.agent.params import AgentSession, build_agent_params
from pegboard.calls.approval import ApprovalRequest, CallbackApprovalHandler, Decision
from pegboard.calls.audit_log import AuditLog
from pegboard.chat.loop import AgentLoop
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ModelInfo
from pegboard.core.tool import ToolContext
from pegboard.formats.calls import ToolCall
from tests.cli.terminal import CONTROLLING_TTY, PseudoTerminal
from tests.gateway.harness import (
    PEGBOARD,
    STARTUP_BOUND,
    Notifications,
    gateway_env,
    run_cli,
    scripted_elicitation,
    sdk_server,
    serve_stdio,
    text_of,
    victim_server,
    wait_for_tools,
    write_config,
)
from tests.integrations import loopback
from tests.integrations.scenario import EMAIL, SCOPE, World
from tests.llm.clients import client_for
from tests.model_server import Call, ScriptedModel, Turn

pytestmark = pytest.mark.anyio

INVOKE = {"name": "send_email", "params": EMAIL}
BROKEN = '{"to": "ops@example.com", "body": '
GRANTED = [
    ("send_email", "allow_session", "ok"),
    ("send_email", "granted_earlier", "ok"),
    ("send_email", "granted_earlier", "ok"),  # the inner call of tool_invoke
    ("tool_invoke", "not_required", "ok"),
]
UNPARSABLE = [("send_email", "not_required", "InvalidToolArguments")]


def trail(world: World) -> list[tuple[str, str, str]]:
    return [(r.tool, r.approval, r.outcome) for r in world.records]


def model_turns(*, broken: bool) -> list[Turn]:
    calls = [
        Call("send_email", EMAIL, id="c1"),
        Call("send_email", EMAIL, id="c2"),
        Call("tool_invoke", INVOKE, id="c3"),
    ]
    if broken:
        calls.append(Call("send_email", BROKEN, id="c4"))
    return [*(Turn(tool_calls=[c]) for c in calls), Turn(text="done")]


def asking(asked: list[str]) -> CallbackApprovalHandler:
    def answer(request: ApprovalRequest) -> Decision:
        asked.append(request.tool_name)
        return "allow_session"

    return CallbackApprovalHandler(answer)


async def library(world: World, server: ScriptedModel) -> list[str]:
    asked: list[str] = []
    session = AgentSession(approval_handler=asking(asked), audit=world.audit)
    params = build_agent_params(world.registry(), SCOPE, ModelInfo("m"), session=session)
    for call in model_turns(broken=True)[:-1]:
        [one] = call.tool_calls
        await params.dispatcher.call(ToolCall.parse(str(one.id), one.name, one.arguments))
    return asked


async def chat(world: World, server: ScriptedModel) -> list[str]:
    asked: list[str] = []
    for turn in model_turns(broken=True):
        server.add(turn)
    loop = AgentLoop(
        client_for("openai", server),
        world.registry(),
        lambda: SCOPE,
        approval_handler=asking(asked),
        session=AgentSession(audit=world.audit),
        fallback_window=128_000,
    )
    result = await loop.run_turn("Email ops twice.")
    assert result.answer == "done"
    return asked


async def pydantic_ai(world: World, server: ScriptedModel) -> list[str]:
    from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from pegboard.integrations.pydantic_ai import DECISION, PegboardToolset

    for turn in model_turns(broken=False):  # pydantic-ai retries unparsable calls itself
        server.add(turn)
    model = OpenAIChatModel(server.model, provider=OpenAIProvider(base_url=server.url, api_key="k"))
    toolset = PegboardToolset(registry=world.registry(), scope=SCOPE, audit=world.audit)
    agent = Agent(model, toolsets=[toolset], output_type=[str, DeferredToolRequests])
    asked: list[str] = []
    result = await agent.run("Email ops twice.")
    while isinstance(result.output, DeferredToolRequests):
        answers = DeferredToolResults()
        for call in result.output.approvals:
            asked.append(str(result.output.metadata[call.tool_call_id]["tool"]))
            answers.approvals[call.tool_call_id] = ToolApproved()
            answers.metadata[call.tool_call_id] = {DECISION: "allow_session"}
        result = await agent.run(
            message_history=result.all_messages(), deferred_tool_results=answers
        )
    assert result.output == "done"
    return asked


async def openai_agents(world: World, server: ScriptedModel) -> list[str]:
    import openai
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner

    from pegboard.integrations.openai_agents import pegboard_tools

    for turn in model_turns(broken=True):
        server.add(turn)
    client = openai.AsyncOpenAI(base_url=server.url, api_key="k")
    tools = pegboard_tools(registry=world.registry(), scope=SCOPE, audit=world.audit)
    agent: Agent[Any] = Agent(
        name="a",
        instructions=tools.instructions,
        tools=list(tools),
        model=OpenAIChatCompletionsModel(model=server.model, openai_client=client),
    )
    config = RunConfig(tracing_disabled=True)
    asked: list[str] = []
    result = await Runner.run(agent, "Email ops twice.", run_config=config)
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            asked.append(str(item.tool_name))
            state.approve(item, always_approve=True)
        result = await Runner.run(agent, state, run_config=config)
    assert result.final_output == "done"
    return asked


async def langchain(world: World, server: ScriptedModel) -> list[str]:
    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI

    from pegboard.integrations.langchain import pegboard_langchain_tools

    for turn in model_turns(broken=False):  # ChatOpenAI sets unparsable calls aside itself
        server.add(turn)
    asked: list[str] = []
    tools = pegboard_langchain_tools(
        registry=world.registry(), scope=SCOPE, audit=world.audit, approval_handler=asking(asked)
    )
    by_name = {tool.name: tool for tool in tools}
    chat_model = ChatOpenAI(model=server.model, base_url=server.url, api_key="k")  # type: ignore[arg-type]
    model = chat_model.bind_tools(list(tools))
    messages: list[Any] = [HumanMessage("Email ops twice.")]
    for _ in range(8):
        reply = await model.ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls:  # type: ignore[attr-defined]
            assert reply.content == "done"
            return asked
        for call in reply.tool_calls:  # type: ignore[attr-defined]
            messages.append(await by_name[call["name"]].ainvoke(call))
    raise AssertionError("the loop did not finish")


Route = Callable[[World, ScriptedModel], Awaitable[list[str]]]
# pegboard chat repairs an unparsable call once (json-repair): the repaired call, with other
# arguments, is one more execution, asked about like any new call.
REPAIRED = [("send_email", "allow_session", "ok")]
IN_PROCESS: dict[str, tuple[Route, list[tuple[str, str, str]]]] = {
    "library": (library, GRANTED + UNPARSABLE),
    "chat": (chat, GRANTED + UNPARSABLE + REPAIRED),
    "pydantic_ai": (pydantic_ai, GRANTED),
    "openai_agents": (openai_agents, GRANTED + UNPARSABLE),
    "langchain": (langchain, GRANTED),
}


@pytest.fixture
def _loopback_only() -> Any:
    loopback.only_loopback()
    yield
    loopback.restore()


@pytest.mark.usefixtures("_loopback_only")
@pytest.mark.parametrize("route", list(IN_PROCESS))
async def test_a_session_grant_covers_the_same_call_directly_and_through_tool_invoke(
    route: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    run, expected = IN_PROCESS[route]
    world = World()
    with anyio.fail_after(60), ScriptedModel() as server:
        asked = await run(world, server)
        assert server.problems == []

    repaired = len(expected) - len(GRANTED + UNPARSABLE) if route == "chat" else 0
    assert asked == ["send_email"] * (1 + repaired)
    assert world.ran[:3] == [("send_email", EMAIL)] * 3
    assert len(world.ran) == 3 + repaired
    assert trail(world) == expected
    assert {r.session_id for r in world.records} == {world.records[0].session_id}


# -- the gateway, over stdio and streamable HTTP, and `pegboard tools call` -------------------

ECHO = "mcp__toolbox__echo"
HI = {"text": "hi"}
GATEWAY_TRAIL = [
    (ECHO, "allow_session", "ok"),
    (ECHO, "granted_earlier", "ok"),
    (ECHO, "granted_earlier", "ok"),
    ("tool_invoke", "not_required", "ok"),
]


def gateway_config(tmp_path: Path) -> None:
    toolbox = sdk_server() | {"force_prompt_tools": ["echo"]}
    bulk = victim_server("--tools", "30")  # enough tools to defer: tool_invoke is offered
    write_config(tmp_path, {"servers": {"toolbox": toolbox, "bulk": bulk}})


def audit_trail(tmp_path: Path) -> list[tuple[str, str, str]]:
    records = AuditLog(tmp_path / "data" / "audit.jsonl").tail(100)
    return [(r["tool"], r["approval"], r["outcome"]) for r in records]


async def grant_scenario(client: Client, changes: Notifications, asked: list[str]) -> None:
    await wait_for_tools(client, changes, ECHO, "tool_invoke")
    results = [
        await client.call_tool(ECHO, HI),
        await client.call_tool(ECHO, HI),
        await client.call_tool("tool_invoke", {"name": ECHO, "params": HI}),
    ]
    assert [(text_of(r), r.is_error) for r in results] == [("hi", False)] * 3
    assert len(asked) == 1


async def test_the_gateway_over_stdio_asks_once_and_audits_each_execution(tmp_path: Path) -> None:
    gateway_config(tmp_path)
    changes, asked = Notifications(), []
    elicit = scripted_elicitation(["allow_session"], asked)
    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(
            tmp_path, "--context-window", "8000", elicitation=elicit, notifications=changes
        ) as client:
            await grant_scenario(client, changes, asked)

    assert audit_trail(tmp_path) == GATEWAY_TRAIL


async def test_the_gateway_over_http_asks_once_and_audits_each_execution(tmp_path: Path) -> None:
    gateway_config(tmp_path)
    env = gateway_env(tmp_path) | {"PEGBOARD_TOKEN": "grant-routes-token"}
    args = [PEGBOARD, "serve", "--http", "--port", "0", "--context-window", "8000"]
    changes, asked = Notifications(), []
    elicit = scripted_elicitation(["allow_session"], asked)
    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(args, env=env) as process:
            url = await served_url(process)
            headers = {"Authorization": "Bearer grant-routes-token"}
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(
                    streamable_http_client(url, http_client=http),
                    mode="legacy",  # the handshake era: a session to grant "for this session"
                    message_handler=changes,
                    elicitation_callback=elicit,
                ) as client,
            ):
                await grant_scenario(client, changes, asked)
            process.terminate()
            await process.wait()

    assert audit_trail(tmp_path) == GATEWAY_TRAIL


async def served_url(process: Any) -> str:
    buffered = ""
    async for chunk in process.stderr:
        buffered += chunk.decode()
        for line in buffered.splitlines():
            if line.startswith("pegboard serving MCP on "):
                return line.removeprefix("pegboard serving MCP on ")
    raise AssertionError(f"pegboard serve exited before serving; stderr: {buffered}")


def tools_call_on_a_terminal(tmp_path: Path, arguments: str, keys: str | None) -> PseudoTerminal:
    env = os.environ | gateway_env(tmp_path)
    code = f"{CONTROLLING_TTY}; from pegboard.cli import main; main()"
    argv = [sys.executable, "-c", code, "tools", "call", ECHO, arguments]
    with PseudoTerminal(argv, env=env) as term:
        if keys is not None:
            term.expect("(d): ")
            term.send(keys)
        term.read_to_end()
    return term


async def test_pegboard_tools_call_asks_once_per_command_and_audits_each_execution(
    tmp_path: Path,
) -> None:
    gateway_config(tmp_path)
    code, _, err = await run_cli(tmp_path, "servers", "refresh", "toolbox")
    assert code == 0, err

    def commands() -> list[PseudoTerminal]:
        return [
            tools_call_on_a_terminal(tmp_path, json.dumps(HI), "s\n"),
            tools_call_on_a_terminal(tmp_path, json.dumps(HI), "d\n\n"),  # a new session asks
            tools_call_on_a_terminal(tmp_path, '{"text": ', None),
        ]

    first, again, broken = await anyio.to_thread.run_sync(commands)

    assert (first.returncode, first.seen.splitlines()[-1].strip()) == (0, "hi")
    assert again.returncode == 1
    assert broken.returncode == 2
    assert "arguments are not valid JSON" in broken.seen
    assert audit_trail(tmp_path) == [
        (ECHO, "allow_session", "ok"),
        (ECHO, "denied", "ApprovalDenied"),
        (ECHO, "not_required", "InvalidToolArguments"),
    ]


class CountingWorld(World):
    """The scenario's registry, its gate a policy function that counts its evaluations."""

    def __init__(self) -> None:
        super().__init__()
        self.evaluated: list[str] = []

    def registry(self) -> ToolRegistry:
        registry = super().registry()
        entry = registry.get_by_name("send_email")
        assert entry is not None

        def policy(args: dict[str, Any], ctx: ToolContext) -> bool:
            self.evaluated.append(ctx.call_id)
            return True

        registry.register(replace(entry, tool=replace(entry.tool, needs_approval=policy)))
        return registry


@pytest.mark.usefixtures("_loopback_only")
@pytest.mark.parametrize("route", list(IN_PROCESS))
async def test_each_route_evaluates_an_approval_policy_once_per_call(
    route: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    run, expected = IN_PROCESS[route]
    world = CountingWorld()
    with anyio.fail_after(60), ScriptedModel() as server:
        await run(world, server)

    assert trail(world) == expected
    gated_runs = [r.call_id for r in world.records if r.tool == "send_email" and r.outcome == "ok"]
    assert sorted(world.evaluated) == sorted(gated_runs)

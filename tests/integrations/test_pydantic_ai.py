from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
import tomli_w

from pegboard.core.entry import ToolEntry
from pegboard.core.registry import ToolRegistry
from pegboard.core.tool import Tool
from tests.integrations.scenario import SCOPE, World
from tests.model_server import Call as ModelCall
from tests.model_server import ScriptedModel, Turn

MCP_SERVERS = Path(__file__).resolve().parents[1] / "mcp" / "servers"
pytestmark = pytest.mark.anyio


async def test_invalid_arguments_come_back_as_a_retry_the_model_corrects(
    model_server: ScriptedModel,
) -> None:
    from pydantic_ai import Agent, DeferredToolRequests
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from pegboard.integrations.pydantic_ai import PegboardToolset
    from tests.integrations.scenario import SCOPE

    bad = {"name": "weather_lookup", "params": {"town": "Oslo"}}
    good = {"name": "weather_lookup", "params": {"city": "Oslo"}}
    model_server.add(
        Turn(tool_calls=[ModelCall("tool_invoke", bad)]),
        Turn(tool_calls=[ModelCall("tool_invoke", good)]),
        Turn(text="Sunny."),
    )
    world = World()
    model = OpenAIChatModel(
        model_server.model, provider=OpenAIProvider(base_url=model_server.url, api_key="k")
    )
    toolset = PegboardToolset(registry=world.registry(), scope=SCOPE, audit=world.audit)
    agent = Agent(model, toolsets=[toolset], output_type=[str, DeferredToolRequests])

    result = await agent.run("Weather in Oslo?")

    assert result.output == "Sunny."
    assert world.ran == [("weather_lookup", {"city": "Oslo"})]
    retry = model_server.requests[1].messages[-1]
    assert retry["role"] == "tool"
    error = json.loads(retry["content"])["error"]
    assert error.startswith('Invalid params for "weather_lookup": city: required property missing')
    assert "function weather_lookup(params) {}" in error
    assert [(r.tool, r.outcome) for r in world.records] == [
        ("weather_lookup", "InvalidToolArguments"),
        ("tool_invoke", "InvalidToolArguments"),
        ("weather_lookup", "ok"),
        ("tool_invoke", "ok"),
    ]


async def test_a_denied_call_never_runs_and_the_model_reads_why(
    model_server: ScriptedModel,
) -> None:
    from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from pegboard.integrations.pydantic_ai import PegboardToolset
    from tests.integrations.scenario import EMAIL, SCOPE

    model_server.add(
        Turn(tool_calls=[ModelCall("send_email", EMAIL)]), Turn(text="Not sent, as you asked.")
    )
    world = World()
    model = OpenAIChatModel(
        model_server.model, provider=OpenAIProvider(base_url=model_server.url, api_key="k")
    )
    agent = Agent(
        model,
        toolsets=[PegboardToolset(registry=world.registry(), scope=SCOPE, audit=world.audit)],
        output_type=[str, DeferredToolRequests],
    )
    first = await agent.run("Email ops.")
    assert isinstance(first.output, DeferredToolRequests)
    [call] = first.output.approvals
    denied = DeferredToolResults(approvals={call.tool_call_id: ToolDenied("not today")})

    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=denied)

    assert second.output == "Not sent, as you asked."
    assert world.ran == []
    assert world.records == []
    assert model_server.requests[1].messages[-1]["content"] == "not today"


async def test_without_an_argument_the_toolset_serves_the_default_config_and_profile(
    model_server: ScriptedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The config's MCP server (a real stdio process) behind PegboardToolset(): its catalog
    runs with the agent, its force-prompt tool pauses the run like any gated tool."""
    from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from pegboard.integrations.pydantic_ai import PegboardToolset

    server = {
        "command": sys.executable,
        "args": [str(MCP_SERVERS / "scripted.py"), "--names", "lookup,erase"],
        "force_prompt_tools": ["erase"],
    }
    config = {"servers": {"files": server}, "profiles": {"work": {"mcp_mode": "disabled"}}}
    (tmp_path / "config.toml").write_text(tomli_w.dumps(config))
    monkeypatch.setenv("PEGBOARD_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("PEGBOARD_DATA_DIR", str(tmp_path / "data"))
    model_server.add(
        Turn(tool_calls=[ModelCall("mcp__files__lookup", {"q": "a"})]),
        Turn(tool_calls=[ModelCall("mcp__files__erase", {"q": "b"})]),
        Turn(text="Erased."),
    )
    model = OpenAIChatModel(
        model_server.model, provider=OpenAIProvider(base_url=model_server.url, api_key="k")
    )

    # The "work" profile (MCP disabled, no web search, no knowledge bases) exposes nothing.
    assert PegboardToolset(profile="work").bridge.listing().shown == ()
    toolset = PegboardToolset()
    agent = Agent(model, toolsets=[toolset], output_type=[str, DeferredToolRequests])
    async with toolset:
        assert toolset.bridge.runtime is not None
        with anyio.fail_after(20):
            await toolset.bridge.runtime.catalog.refresh_tools("files")
        first = await agent.run("Look up a, then erase b.")
        assert isinstance(first.output, DeferredToolRequests)
        [gated] = first.output.approvals
        assert gated.tool_name == "mcp__files__erase"
        approve = DeferredToolResults(approvals={gated.tool_call_id: ToolApproved()})
        second = await agent.run(
            message_history=first.all_messages(), deferred_tool_results=approve
        )

    assert second.output == "Erased."
    results = [m for m in model_server.requests[2].messages if m["role"] == "tool"]
    assert [m["content"] for m in results] == ['lookup:{"q": "a"}', 'erase:{"q": "b"}']


def _many_tools(count: int) -> ToolRegistry:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    return ToolRegistry(
        ToolEntry(
            f"tool_{i}",
            "demo",
            Tool(f"Tool number {i}, which does one thing well. " * 4, schema, execute=print),
        )
        for i in range(count)
    )


@pytest.mark.parametrize(
    ("window", "listed"),
    [
        (1_000_000, [f"tool_{i}" for i in range(40)]),
        (8_000, ["tool_inspect", "tool_invoke", "tool_search"]),
    ],
)
async def test_the_tools_are_deferred_for_the_models_context_window(
    model_server: ScriptedModel, window: int, listed: list[str]
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.profiles import ModelProfile
    from pydantic_ai.providers.openai import OpenAIProvider

    from pegboard.integrations.pydantic_ai import PegboardToolset

    model_server.add(Turn(text="ok"))
    model = OpenAIChatModel(
        model_server.model,
        provider=OpenAIProvider(base_url=model_server.url, api_key="k"),
        profile=ModelProfile(context_window=window),
    )
    agent = Agent(model, toolsets=[PegboardToolset(registry=_many_tools(40), scope=SCOPE)])

    await agent.run("hi")

    assert sorted(model_server.requests[0].tool_names) == sorted(listed)


async def test_a_strict_tool_gets_its_strict_nulls_removed(model_server: ScriptedModel) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from pegboard.integrations.pydantic_ai import PegboardToolset

    ran: list[dict[str, object]] = []
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["q"],
    }
    tool = Tool("Find.", schema, execute=lambda args, ctx: ran.append(args) or "ok", strict=True)
    registry = ToolRegistry([ToolEntry("find", "demo", tool, defer="never")])
    model_server.add(
        Turn(tool_calls=[ModelCall("find", {"q": "x", "limit": None})]), Turn(text="done")
    )
    model = OpenAIChatModel(
        model_server.model, provider=OpenAIProvider(base_url=model_server.url, api_key="k")
    )
    agent = Agent(model, toolsets=[PegboardToolset(registry=registry, scope=SCOPE)])

    result = await agent.run("find x")

    assert result.output == "done"
    assert ran == [{"q": "x"}]
    [sent] = model_server.requests[0].tools
    assert sent["function"]["strict"] is True

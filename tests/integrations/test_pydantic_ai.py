from __future__ import annotations

import json

import pytest

from tests.integrations.drivers import run_pydantic_ai
from tests.integrations.scenario import EXPECTED_RAN, FINAL, World, turns
from tests.model_server import ScriptedModel, Turn
from tests.model_server import Call as ModelCall

pytest.importorskip("pydantic_ai")
pytestmark = pytest.mark.anyio


async def test_an_agent_run_searches_invokes_a_deferred_tool_and_pauses_for_the_gated_one(
    model_server: ScriptedModel,
) -> None:
    model_server.add(*turns())
    world = World()

    outcome = await run_pydantic_ai(world, model_server)

    assert outcome.asked == ["send_email"]
    assert outcome.ran_before_approval == ["weather_lookup"]
    assert world.ran == EXPECTED_RAN
    assert outcome.answer == FINAL
    first = model_server.requests[0]
    assert sorted(first.tool_names) == ["send_email", "tool_inspect", "tool_invoke", "tool_search"]
    assert "weather_lookup" in json.dumps(first.body["messages"][0])  # the deferred section
    search_result = model_server.requests[1].messages[-1]
    assert search_result["role"] == "tool"
    assert "weather_lookup" in search_result["content"]
    assert model_server.problems == []


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


def test_without_an_argument_the_toolset_serves_the_default_config_and_profile(
    tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pegboard.integrations.pydantic_ai import PegboardToolset

    config = tmp_path / "config.toml"  # type: ignore[operator]
    config.write_text('[profiles.work]\nmcp_mode = "disabled"\n')
    monkeypatch.setenv("PEGBOARD_CONFIG", str(config))
    monkeypatch.setenv("PEGBOARD_DATA_DIR", str(tmp_path))

    default = PegboardToolset()
    work = PegboardToolset(profile="work")

    assert default.bridge.runtime is not None
    assert default.bridge.runtime.loaded.path == config
    assert work.bridge.runtime is not None
    assert work.bridge.runtime.settings.mcp_mode == "disabled"

from __future__ import annotations

import pytest

from pegboard.core.entry import ToolEntry
from pegboard.core.registry import ToolRegistry
from pegboard.core.tool import Tool
from tests.integrations.scenario import SCOPE
from tests.model_server import Call as ModelCall
from tests.model_server import ScriptedModel, Turn

pytestmark = pytest.mark.anyio


def _strictness_registry(ran: list[dict[str, object]]) -> ToolRegistry:
    def record(args: dict[str, object], ctx: object) -> str:
        ran.append(dict(args))
        return "ok"

    optional = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
        "required": ["q"],
    }
    free_form = {
        "type": "object",
        "properties": {"payload": {"type": "object", "additionalProperties": True}},
    }
    return ToolRegistry(
        [
            ToolEntry(
                "find", "demo", Tool("Find things.", optional, execute=record), defer="never"
            ),
            ToolEntry(
                "post", "demo", Tool("Post a payload.", free_form, execute=record), defer="never"
            ),
        ]
    )


async def test_schemas_are_strict_where_they_can_be_and_strict_nulls_are_relaxed(
    model_server: ScriptedModel,
) -> None:
    import openai
    from agents import Agent, OpenAIResponsesModel, RunConfig, Runner

    from pegboard.integrations.openai_agents import pegboard_tools

    ran: list[dict[str, object]] = []
    tools = pegboard_tools(registry=_strictness_registry(ran), scope=SCOPE)
    model_server.add(
        Turn(tool_calls=[ModelCall("find", {"q": "x", "limit": None})]), Turn(text="done")
    )
    client = openai.AsyncOpenAI(base_url=model_server.url, api_key="k")
    agent: Agent[None] = Agent(
        name="a", tools=list(tools), model=OpenAIResponsesModel(model_server.model, client)
    )

    result = await Runner.run(agent, "go", run_config=RunConfig(tracing_disabled=True))

    assert result.final_output == "done"
    assert ran == [{"q": "x"}]
    sent = {t["name"]: t for t in model_server.requests[0].tools}
    assert sent["find"]["strict"] is True
    assert sent["find"]["parameters"]["required"] == ["q", "limit"]
    assert sent["find"]["parameters"]["properties"]["limit"]["type"] == ["integer", "null"]
    assert sent["post"]["strict"] is False
    assert sent["post"]["parameters"] == {
        "type": "object",
        "properties": {"payload": {"type": "object", "additionalProperties": True}},
    }


async def test_a_rejected_call_never_runs(model_server: ScriptedModel) -> None:
    import openai
    from agents import Agent, OpenAIResponsesModel, RunConfig, Runner

    from pegboard.integrations.openai_agents import pegboard_tools
    from tests.integrations.scenario import EMAIL, World

    world = World()
    tools = pegboard_tools(registry=world.registry(), scope=SCOPE, audit=world.audit)
    model_server.add(Turn(tool_calls=[ModelCall("send_email", EMAIL)]), Turn(text="Not sent."))
    client = openai.AsyncOpenAI(base_url=model_server.url, api_key="k")
    agent: Agent[None] = Agent(
        name="a", tools=list(tools), model=OpenAIResponsesModel(model_server.model, client)
    )
    config = RunConfig(tracing_disabled=True)
    first = await Runner.run(agent, "Email ops.", run_config=config)
    [item] = first.interruptions
    state = first.to_state()
    state.reject(item, rejection_message="The user said no.")

    second = await Runner.run(agent, state, run_config=config)

    assert second.final_output == "Not sent."
    assert world.ran == []
    assert world.records == []
    outputs = [
        m for m in model_server.requests[1].messages if m.get("type") == "function_call_output"
    ]
    assert [o["output"] for o in outputs] == ["The user said no."]

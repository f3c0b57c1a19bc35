"""Tools of a config's MCP servers used outside ``async with``: one clear error naming it,
raised to the application (not handed to the model as a tool result), through the real
Agents SDK runner and LangChain tool; inside ``async with`` the same call runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pegboard.errors import NotStarted
from tests.gateway.harness import run_cli, sdk_server, write_config
from tests.model_server import Call as ModelCall
from tests.model_server import ScriptedModel, Turn

pytestmark = pytest.mark.anyio

EXPECTED = (
    "mcp__toolbox__add needs pegboard's MCP servers, which are not running: use the tools "
    "inside `async with tools:` (pegboard_tools(), pegboard_langchain_tools()) or "
    "`async with toolset:` (PegboardToolset), which starts the servers and stops them at the end"
)


async def _refreshed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = write_config(tmp_path, {"servers": {"toolbox": sdk_server()}})
    monkeypatch.setenv("PEGBOARD_DATA_DIR", str(tmp_path / "data"))
    code, _, _ = await run_cli(tmp_path, "servers", "refresh")
    assert code == 0
    return config


async def test_the_agents_sdk_runner_raises_not_started_outside_async_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_server: ScriptedModel
) -> None:
    import openai
    from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, UserError

    from pegboard.integrations.openai_agents import pegboard_tools

    config = await _refreshed(tmp_path, monkeypatch)
    call = Turn(tool_calls=[ModelCall("mcp__toolbox__add", {"a": 2, "b": 3})])
    model_server.add(call, call, Turn(text="It is 5."))
    client = openai.AsyncOpenAI(base_url=model_server.url, api_key="k")
    tools = pegboard_tools(config=config)
    agent: Agent[None] = Agent(
        name="a", tools=list(tools), model=OpenAIResponsesModel(model_server.model, client)
    )
    run_config = RunConfig(tracing_disabled=True)

    with pytest.raises(UserError) as raised:  # the SDK's wrapper of a tool's own exception
        await Runner.run(agent, "Add 2 and 3.", run_config=run_config)
    async with tools:
        inside = await Runner.run(agent, "Add 2 and 3.", run_config=run_config)

    assert isinstance(raised.value.__cause__, NotStarted)
    assert str(raised.value) == f"Error running tool mcp__toolbox__add: {EXPECTED}"
    assert inside.final_output == "It is 5."


async def test_a_langchain_tool_raises_not_started_outside_async_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pegboard.integrations.langchain import pegboard_langchain_tools

    config = await _refreshed(tmp_path, monkeypatch)
    tools = pegboard_langchain_tools(config=config)
    [add] = [tool for tool in tools if tool.name == "mcp__toolbox__add"]

    with pytest.raises(NotStarted) as raised:
        await add.ainvoke({"a": 2, "b": 3})
    async with tools:
        inside = await add.ainvoke({"a": 2, "b": 3})

    assert str(raised.value) == EXPECTED
    assert inside == "5"

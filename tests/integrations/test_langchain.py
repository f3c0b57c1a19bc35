from __future__ import annotations

import pytest

from tests.integrations.scenario import EMAIL, SCOPE, World

pytestmark = pytest.mark.anyio


def test_the_json_schemas_are_passed_as_they_are() -> None:
    from pegboard.integrations.langchain import pegboard_langchain_tools

    world = World()
    tools = pegboard_langchain_tools(registry=world.registry(), scope=SCOPE)
    email = next(t for t in tools if t.name == "send_email")

    from langchain_core.utils.function_calling import convert_to_openai_tool

    schema = world.registry().get_by_name("send_email").tool.input_schema
    assert email.args_schema == schema
    assert convert_to_openai_tool(email)["function"]["parameters"] == schema


async def test_without_an_approval_handler_a_gated_call_is_an_error_the_agent_sees() -> None:
    from pegboard.integrations.langchain import pegboard_langchain_tools

    world = World()
    tools = pegboard_langchain_tools(registry=world.registry(), scope=SCOPE, audit=world.audit)
    email = next(t for t in tools if t.name == "send_email")

    message = await email.ainvoke(
        {"type": "tool_call", "id": "c1", "name": "send_email", "args": EMAIL}
    )

    assert message.content == (
        "Error: Tool send_email needs approval and the application did not approve this call; "
        "it was not run."
    )
    assert world.ran == []
    assert [(r.tool, r.approval, r.outcome) for r in world.records] == [
        ("send_email", "denied", "ApprovalDenied")
    ]


def test_a_tool_runs_synchronously_too() -> None:
    from pegboard.integrations.langchain import pegboard_langchain_tools

    world = World()
    tools = pegboard_langchain_tools(registry=world.registry(), scope=SCOPE)
    invoke = next(t for t in tools if t.name == "tool_invoke")

    assert (
        invoke.invoke({"name": "weather_lookup", "params": {"city": "Oslo"}}) == "Oslo: sunny, 21 C"
    )
    assert world.ran == [("weather_lookup", {"city": "Oslo"})]

"""The meta-tools' model-facing definitions: example calls, and what their schemas accept."""

import json
from typing import Any

import pytest

from pegboard.agent.params import build_agent_params
from pegboard.core.registry import ToolRegistry
from pegboard.core.schema import validate_arguments
from pegboard.core.scope import ModelInfo, ToolApplyScope
from pegboard.deferral.definitions import (
    DEFINITIONS,
    INSPECT_EXAMPLE,
    INVOKE_EXAMPLE,
    TOOL_INSPECT,
    TOOL_INVOKE,
)
from tests.deferral.factories import Calls, entry, heavy, recorder


@pytest.mark.parametrize(
    ("name", "example"), [(TOOL_INSPECT, INSPECT_EXAMPLE), (TOOL_INVOKE, INVOKE_EXAMPLE)]
)
def test_inspect_and_invoke_carry_one_example_call_that_their_schema_accepts(
    name: str, example: dict[str, Any]
) -> None:
    schema = DEFINITIONS[name].input_schema
    assert schema["examples"] == [example]
    validate_arguments(schema, dict(example), tool_name=name)


def test_the_invoke_example_has_a_name_and_params_and_the_inspect_example_a_name() -> None:
    assert set(INVOKE_EXAMPLE) == {"name", "params"}
    assert set(INSPECT_EXAMPLE) == {"name"}


def test_tool_invoke_params_accept_any_additional_properties() -> None:
    schema = DEFINITIONS[TOOL_INVOKE].input_schema
    assert schema["properties"]["params"]["additionalProperties"] is True
    args = {"name": "x", "params": {"anything": 1, "nested": {"deep": [1, {"k": None}]}}}
    validate_arguments(schema, args, tool_name=TOOL_INVOKE)


@pytest.mark.anyio
async def test_params_with_keys_no_schema_names_reach_the_inner_tool_through_the_dispatcher() -> (
    None
):
    calls: Calls = []
    open_schema = {"type": "object", "additionalProperties": True}
    registry = ToolRegistry(
        [heavy(f"mcp__s1__t{i}", execute=recorder(calls, f"t{i}")) for i in range(4)]
        + [entry("mcp__s1__open", schema=open_schema, execute=recorder(calls, "open ran"))]
    )
    params = build_agent_params(registry, ToolApplyScope(), ModelInfo("m", "openai", 32_000))
    assert "tool_invoke" in [t["function"]["name"] for t in params.tools]
    args = {"name": "mcp__s1__open", "params": {"colour": "red", "sizes": [1, 2]}}
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "tool_invoke", "arguments": json.dumps(args)},
            }
        ],
    }
    [answer] = await params.dispatcher.respond(message)
    assert answer["content"] == "open ran"
    assert calls == [("c1::mcp__s1__open", {"colour": "red", "sizes": [1, 2]}, "mcp__s1__open")]

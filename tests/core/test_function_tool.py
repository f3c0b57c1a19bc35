from typing import Literal

import pytest
from pydantic import BaseModel

from pegboard.core.output import TextPart, ToolOutput
from pegboard.core.tool import Tool, ToolContext
from pegboard.errors import InvalidToolArguments


def add(a: int, b: int = 2) -> int:
    """Add two numbers.

    Longer explanation that is not part of the description.

    Args:
        a: The first number.
        b: The second number,
            continued on the next line.
    """
    return a + b


async def greet(name: str, ctx: ToolContext, style: Literal["short", "long"] = "short") -> str:
    """Greet someone."""
    return f"hi {name} ({style}) from {ctx.call_id}"


def test_docstring_gives_the_description_and_parameter_descriptions() -> None:
    tool = Tool.from_function(add)
    assert tool.description == "Add two numbers."
    assert tool.input_schema == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first number."},
            "b": {
                "type": "integer",
                "default": 2,
                "description": "The second number, continued on the next line.",
            },
        },
        "required": ["a"],
    }
    assert tool.output_schema == {"type": "integer"}


def test_explicit_description_overrides_the_docstring() -> None:
    assert Tool.from_function(add, description="Sum.").description == "Sum."


def test_function_without_docstring_is_described_by_its_name() -> None:
    def ping() -> None:
        return None

    tool = Tool.from_function(ping)
    assert tool.description == "ping"
    assert tool.input_schema == {"type": "object", "properties": {}}
    assert tool.output_schema is None


@pytest.mark.anyio
async def test_sync_function_runs_with_validated_and_defaulted_arguments() -> None:
    tool = Tool.from_function(add)
    assert await tool.run({"a": 1}, ToolContext(call_id="c1")) == 3


@pytest.mark.anyio
async def test_async_function_receives_the_tool_context_hidden_from_the_schema() -> None:
    tool = Tool.from_function(greet)
    assert set(tool.input_schema["properties"]) == {"name", "style"}
    assert tool.input_schema["properties"]["style"] == {
        "enum": ["short", "long"],
        "type": "string",
        "default": "short",
    }
    result = await tool.run({"name": "Ada"}, ToolContext(call_id="call-7"))
    assert result == "hi Ada (short) from call-7"


@pytest.mark.anyio
async def test_invalid_arguments_are_refused_before_the_call_naming_field_and_type() -> None:
    calls: list[int] = []

    def record(count: int) -> int:
        calls.append(count)
        return count

    tool = Tool.from_function(record)
    with pytest.raises(InvalidToolArguments) as info:
        await tool.run({"count": "ten"}, ToolContext())
    assert info.value.tool_name == "record"
    assert info.value.problems == (
        "count: Input should be a valid integer, unable to parse string as an integer",
    )
    with pytest.raises(InvalidToolArguments) as missing:
        await tool.run({}, ToolContext())
    assert missing.value.problems == ("count: Field required",)
    assert calls == []


def test_pydantic_models_become_nested_schemas() -> None:
    class Point(BaseModel):
        x: float
        y: float

    def move(to: Point) -> None:
        """Move."""

    schema = Tool.from_function(move).input_schema
    assert schema["properties"]["to"] == {"$ref": "#/$defs/Point"}
    assert schema["$defs"]["Point"]["required"] == ["x", "y"]


def test_var_args_cannot_become_a_schema() -> None:
    def spread(*items: str) -> None:
        return None

    with pytest.raises(TypeError, match=r"spread: \*args/\*\*kwargs cannot be described"):
        Tool.from_function(spread)


def test_a_function_returning_tool_output_has_no_output_schema() -> None:
    def show() -> ToolOutput:
        return ToolOutput(parts=(TextPart("x"),))

    assert Tool.from_function(show).output_schema is None

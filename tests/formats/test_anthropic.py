import pydantic
import pytest
from anthropic.types import Message, ToolParam, ToolResultBlockParam

from pegboard.core.entry import ToolEntry
from pegboard.core.output import AudioPart, ImagePart, ResourcePart, TextPart, ToolOutput
from pegboard.core.schema import validate_arguments
from pegboard.core.tool import Tool, ToolContext
from pegboard.errors import ConfigError
from pegboard.formats.anthropic import (
    anthropic_tool_result,
    parse_anthropic_tool_calls,
    to_anthropic_tools,
)
from pegboard.formats.calls import ToolCall
from tests.formats.tools import PNG_1PX, search_entry, strict_plot_entry

RESULT_ADAPTER = pydantic.TypeAdapter(ToolResultBlockParam)


def test_tools_carry_name_description_and_input_schema_and_strict_when_set() -> None:
    tools = to_anthropic_tools([search_entry(), strict_plot_entry()])
    assert tools == [
        {
            "name": "web_search",
            "description": "Search the web.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for."},
                    "limit": {"type": "integer", "default": 3, "description": "How many results."},
                },
                "required": ["query"],
            },
        },
        {
            "name": "mcp__charts__plot",
            "description": "Plot points as a PNG.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "points": {
                        "anyOf": [{"items": {"type": "number"}, "type": "array"}, {"type": "null"}]
                    },
                },
                "required": ["title"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    ]
    adapter = pydantic.TypeAdapter(ToolParam)
    for tool in tools:
        adapter.validate_python(tool)


def assistant_message(content: list[dict[str, object]]) -> Message:
    return Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )


def test_tool_use_blocks_parse_from_sdk_messages_dicts_and_content_lists() -> None:
    message = assistant_message(
        [
            {"type": "text", "text": "Let me search."},
            {"type": "tool_use", "id": "toolu_1", "name": "web_search", "input": {"query": "rust"}},
        ]
    )
    expected = [ToolCall("toolu_1", "web_search", {"query": "rust"})]
    assert parse_anthropic_tool_calls(message) == expected
    assert parse_anthropic_tool_calls(message.model_dump()) == expected
    assert parse_anthropic_tool_calls(message.model_dump()["content"]) == expected
    assert parse_anthropic_tool_calls({"role": "assistant", "content": "plain"}) == []


def test_a_string_input_from_a_proxy_is_parsed_like_openai_arguments() -> None:
    [call] = parse_anthropic_tool_calls(
        [{"type": "tool_use", "id": "t", "name": "n", "input": '{"a": 1'}]
    )
    assert call.raw_arguments == '{"a": 1'
    assert not call.is_valid


@pytest.mark.anyio
async def test_round_trip_definition_call_execution_result() -> None:
    entry = search_entry()
    [tool] = to_anthropic_tools([entry])
    message = assistant_message(
        [{"type": "tool_use", "id": "toolu_9", "name": tool["name"], "input": {"query": "go"}}]
    )
    [call] = parse_anthropic_tool_calls(message)
    validate_arguments(tool["input_schema"], call.arguments, tool_name=call.name)
    result = await entry.tool.run(call.arguments, ToolContext(call_id=call.id))
    block = anthropic_tool_result(call.id, entry.tool.to_model_output(result))
    assert block == {
        "type": "tool_result",
        "tool_use_id": "toolu_9",
        "content": [{"type": "text", "text": '["go 0", "go 1", "go 2"]'}],
    }
    RESULT_ADAPTER.validate_python(block)


def test_result_maps_every_part_kind_and_keeps_is_error() -> None:
    output = ToolOutput(
        parts=(
            TextPart("chart"),
            ImagePart(PNG_1PX, "image/png"),
            ImagePart("AAAA", "image/bmp"),
            AudioPart("AAAA", "audio/wav"),
            ResourcePart("file:///notes.md", "text/markdown", text="# Notes"),
            ResourcePart("file:///a.pdf", "application/pdf", blob="JVBERi0="),
            ResourcePart("https://example.com/x", None),
        ),
        is_error=True,
    )
    block = anthropic_tool_result("toolu_1", output)
    assert block == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [
            {"type": "text", "text": "chart"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PNG_1PX},
            },
            {"type": "text", "text": "[image: image/bmp]"},
            {"type": "text", "text": "[audio: audio/wav]"},
            {"type": "text", "text": "# Notes"},
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
            },
            {"type": "text", "text": "[resource: https://example.com/x]"},
        ],
        "is_error": True,
    }
    RESULT_ADAPTER.validate_python(block)


def test_structured_only_results_become_json_text_and_empty_results_have_no_content() -> None:
    structured = ToolOutput(structured={"n": 1})
    assert anthropic_tool_result("t", structured)["content"] == [
        {"type": "text", "text": '{"n": 1}'}
    ]
    assert anthropic_tool_result("t", ToolOutput()) == {"type": "tool_result", "tool_use_id": "t"}
    assert anthropic_tool_result("t", ToolOutput.text("")) == {
        "type": "tool_result",
        "tool_use_id": "t",
    }


def test_a_name_the_api_would_refuse_is_reported_before_the_request() -> None:
    entry = ToolEntry("PDF&URLTool", "user", Tool("T."))
    with pytest.raises(ConfigError) as info:
        to_anthropic_tools([entry])
    assert str(info.value) == (
        "Tool name 'PDF&URLTool' is not accepted by Anthropic: use 1-64 characters from "
        "letters, digits, '_' and '-'. Register the tool under such a name."
    )

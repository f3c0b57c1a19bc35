import json
from typing import Any

import pydantic
import pytest
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessage,
    ChatCompletionToolMessageParam,
    ChatCompletionToolParam,
)
from openai.types.responses import FunctionToolParam, Response
from openai.types.responses.response_input_param import FunctionCallOutput

from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.schema import validate_arguments
from pegboard.core.tool import Tool, ToolContext
from pegboard.errors import ConfigError, SchemaError
from pegboard.formats.calls import ToolCall
from pegboard.formats.openai import (
    chat_tool_result,
    parse_chat_tool_calls,
    parse_responses_tool_calls,
    responses_tool_result,
    to_chat_tools,
    to_responses_tools,
)
from pegboard.formats.strict import relax_strict_arguments
from tests.formats.tools import PNG_1PX, plot, search_entry, strict_plot_entry

SEARCH_PARAMETERS = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for."},
        "limit": {"type": "integer", "default": 3, "description": "How many results."},
    },
    "required": ["query"],
}
PLOT_STRICT_PARAMETERS = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "points": {"anyOf": [{"items": {"type": "number"}, "type": "array"}, {"type": "null"}]},
    },
    "required": ["title", "points"],
    "additionalProperties": False,
}


def test_chat_tools_wrap_each_function_and_send_strict_only_when_set() -> None:
    tools = to_chat_tools([search_entry(), strict_plot_entry()])
    assert tools == [
        {
            "type": "function",
            "function": {
                "name": "web_search",
                "description": "Search the web.",
                "parameters": SEARCH_PARAMETERS,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "mcp__charts__plot",
                "description": "Plot points as a PNG.",
                "parameters": PLOT_STRICT_PARAMETERS,
                "strict": True,
            },
        },
    ]
    adapter = pydantic.TypeAdapter(ChatCompletionToolParam)
    for tool in tools:
        adapter.validate_python(tool)


def test_responses_tools_are_flat_and_always_say_strict() -> None:
    tools = to_responses_tools([search_entry(), strict_plot_entry()])
    assert tools == [
        {
            "type": "function",
            "name": "web_search",
            "description": "Search the web.",
            "parameters": SEARCH_PARAMETERS,
            "strict": False,
        },
        {
            "type": "function",
            "name": "mcp__charts__plot",
            "description": "Plot points as a PNG.",
            "parameters": PLOT_STRICT_PARAMETERS,
            "strict": True,
        },
    ]
    adapter = pydantic.TypeAdapter(FunctionToolParam)
    for tool in tools:
        adapter.validate_python(tool)


def test_strict_tool_with_an_inexpressible_schema_is_refused() -> None:
    tool = Tool("Free-form.", {"type": "object", "additionalProperties": True}, strict=True)
    with pytest.raises(SchemaError, match="OpenAI strict mode cannot express the schema of tool"):
        to_chat_tools([ToolEntry("free", "user", tool)])


def chat_message(calls: list[tuple[str, str, str]]) -> ChatCompletionMessage:
    return ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                for i, n, a in calls
            ],
        }
    )


def test_chat_tool_calls_parse_from_sdk_objects_dicts_and_lists() -> None:
    message = chat_message([("call_1", "web_search", '{"query": "rust"}'), ("call_2", "x", "{")])
    expected = [
        ToolCall("call_1", "web_search", {"query": "rust"}, '{"query": "rust"}'),
        ToolCall(
            "call_2",
            "x",
            {},
            "{",
            "arguments are not valid JSON (Expecting property name enclosed in double quotes "
            "at line 1 column 2)",
        ),
    ]
    assert parse_chat_tool_calls(message) == expected
    assert parse_chat_tool_calls(message.model_dump()) == expected
    assert parse_chat_tool_calls(message.model_dump()["tool_calls"]) == expected
    assert parse_chat_tool_calls({"role": "assistant", "content": "hi"}) == []
    completion = ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-test",
            "choices": [
                {"index": 0, "finish_reason": "tool_calls", "message": message.model_dump()}
            ],
        }
    )
    assert parse_chat_tool_calls(completion) == expected


@pytest.mark.anyio
async def test_chat_round_trip_definition_call_execution_result() -> None:
    entry = search_entry()
    [tool] = to_chat_tools([entry])
    # The model answers with a call to the tool it was given.
    message = chat_message([("call_9", tool["function"]["name"], '{"query": "rust", "limit": 2}')])
    [call] = parse_chat_tool_calls(message)
    validate_arguments(entry.tool.input_schema, call.arguments, tool_name=call.name)
    result = await entry.tool.run(call.arguments, ToolContext(call_id=call.id))
    reply = chat_tool_result(call.id, entry.tool.to_model_output(result))
    assert reply == {"role": "tool", "tool_call_id": "call_9", "content": '["rust 0", "rust 1"]'}
    pydantic.TypeAdapter(ChatCompletionToolMessageParam).validate_python(reply)


@pytest.mark.anyio
async def test_strict_round_trip_turns_nulls_back_into_defaults() -> None:
    entry = strict_plot_entry()
    [tool] = to_chat_tools([entry])
    sent = {"title": "t", "points": None}
    validate_arguments(tool["function"]["parameters"], sent)
    [call] = parse_chat_tool_calls(chat_message([("c", "mcp__charts__plot", json.dumps(sent))]))
    args = relax_strict_arguments(entry.tool.input_schema, call.arguments)
    validate_arguments(entry.tool.input_schema, args)
    output = entry.tool.to_model_output(await entry.tool.run(args, ToolContext(call_id=call.id)))
    assert chat_tool_result(call.id, output) == {
        "role": "tool",
        "tool_call_id": "c",
        "content": "t: 0 points\n[image: image/png]",
    }


def test_chat_error_results_are_marked() -> None:
    assert chat_tool_result("c", ToolOutput.error("boom"))["content"] == "Error: boom"
    assert chat_tool_result("c", ToolOutput.error("Error: boom"))["content"] == "Error: boom"


def response_with(items: list[dict[str, Any]]) -> Response:
    return Response.model_validate(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "model": "gpt-test",
            "output": items,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
    )


def test_responses_function_calls_parse_by_call_id() -> None:
    response = response_with(
        [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "hi", "annotations": []}],
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "web_search",
                "arguments": '{"query": "rust"}',
                "status": "completed",
            },
        ]
    )
    expected = [ToolCall("call_1", "web_search", {"query": "rust"}, '{"query": "rust"}')]
    assert parse_responses_tool_calls(response) == expected
    assert parse_responses_tool_calls(response.model_dump()["output"]) == expected


@pytest.mark.anyio
async def test_responses_round_trip_definition_call_execution_result() -> None:
    entry = search_entry()
    [tool] = to_responses_tools([entry])
    pydantic.TypeAdapter(FunctionToolParam).validate_python(tool)
    call_item = {
        "type": "function_call",
        "id": "fc_7",
        "call_id": "call_7",
        "name": tool["name"],
        "arguments": '{"query": "go"}',
        "status": "completed",
    }
    [call] = parse_responses_tool_calls(response_with([call_item]))
    assert call == ToolCall("call_7", "web_search", {"query": "go"}, '{"query": "go"}')
    validate_arguments(tool["parameters"], call.arguments, tool_name=call.name)
    result = await entry.tool.run(call.arguments, ToolContext(call_id=call.id))
    reply = responses_tool_result(call.id, entry.tool.to_model_output(result))
    assert reply == {
        "type": "function_call_output",
        "call_id": "call_7",
        "output": '["go 0", "go 1", "go 2"]',
    }
    pydantic.TypeAdapter(FunctionCallOutput).validate_python(reply)


def test_responses_result_is_a_string_or_text_and_image_parts() -> None:
    adapter = pydantic.TypeAdapter(FunctionCallOutput)
    plain = responses_tool_result("call_1", ToolOutput.text("ok"))
    assert plain == {"type": "function_call_output", "call_id": "call_1", "output": "ok"}
    adapter.validate_python(plain)
    output = plot("t", [1.0])
    rich = responses_tool_result("call_2", output)
    assert rich == {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": [
            {"type": "input_text", "text": "t: 1 points"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG_1PX}"},
        ],
    }
    adapter.validate_python(rich)


@pytest.mark.parametrize("name", ["my tool", "getPM2.5Level", "x" * 65, ""])
def test_a_name_the_api_would_refuse_is_reported_before_the_request(name: str) -> None:
    entry = ToolEntry(name, "user", Tool("T."))
    with pytest.raises(ConfigError, match="is not accepted by OpenAI: use 1-64 characters"):
        to_chat_tools([entry])
    with pytest.raises(ConfigError, match="is not accepted by OpenAI"):
        to_responses_tools([entry])

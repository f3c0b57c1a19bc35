import logging

import mcp_types
import pytest

from pegboard.core.entry import ToolEntry
from pegboard.core.schema import validate_arguments
from pegboard.core.tool import Tool, ToolContext
from pegboard.formats.calls import ToolCall
from pegboard.formats.mcp import parse_mcp_tool_call, to_mcp_tool, to_mcp_tools
from tests.formats.tools import search_entry

OBJECT_OUT = {"type": "object", "properties": {"n": {"type": "integer"}}}


def test_entry_becomes_an_mcp_tool_with_wire_schema_names() -> None:
    tool = Tool(
        "Delete a file.",
        {"type": "object", "properties": {"path": {"type": "string"}}},
        output_schema=OBJECT_OUT,
        annotations={"destructiveHint": True, "readOnlyHint": False},
        title="Delete file",
    )
    mcp_tool = to_mcp_tool(ToolEntry("mcp__fs__delete", "mcp:fs", tool))
    assert mcp_tool.model_dump(by_alias=True, exclude_none=True) == {
        "name": "mcp__fs__delete",
        "title": "Delete file",
        "description": "Delete a file.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
        "outputSchema": OBJECT_OUT,
        "annotations": {"destructiveHint": True, "readOnlyHint": False},
    }


def test_non_object_output_schemas_are_left_out() -> None:
    [mcp_tool] = to_mcp_tools([search_entry()])
    assert search_entry().tool.output_schema == {"type": "array", "items": {"type": "string"}}
    assert mcp_tool.output_schema is None
    assert mcp_tool.input_schema == search_entry().tool.input_schema


def test_invalid_annotations_are_dropped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    tool = Tool("T.", annotations={"readOnlyHint": "very"})
    with caplog.at_level(logging.WARNING, logger="pegboard.formats"):
        mcp_tool = to_mcp_tool(ToolEntry("t", "user", tool))
    assert mcp_tool.annotations is None
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["tool t"]


def test_call_params_parse_from_sdk_objects_and_json() -> None:
    params = mcp_types.CallToolRequestParams(name="mcp__fs__delete", arguments={"path": "/x"})
    expected = ToolCall("req-1", "mcp__fs__delete", {"path": "/x"})
    assert parse_mcp_tool_call(params, "req-1") == expected
    assert parse_mcp_tool_call(
        {"name": "mcp__fs__delete", "arguments": {"path": "/x"}}, "req-1"
    ) == (expected)
    assert parse_mcp_tool_call({"name": "kb_list"}) == ToolCall("", "kb_list", {})


@pytest.mark.anyio
async def test_round_trip_definition_over_json_call_execution() -> None:
    entry = search_entry()
    wire = to_mcp_tool(entry).model_dump_json(by_alias=True, exclude_none=True)
    listed = mcp_types.Tool.model_validate_json(wire)
    assert (listed.name, listed.description) == ("web_search", "Search the web.")
    assert listed.input_schema == entry.tool.input_schema
    request = mcp_types.CallToolRequest.model_validate_json(
        '{"method": "tools/call", "params": {"name": "web_search", "arguments": {"query": "mcp"}}}'
    )
    call = parse_mcp_tool_call(request.params, "7")
    assert call == ToolCall("7", "web_search", {"query": "mcp"})
    validate_arguments(listed.input_schema, call.arguments, tool_name=call.name)
    result = await entry.tool.run(call.arguments, ToolContext(call_id=call.id))
    assert entry.tool.to_model_output(result).as_text() == '["mcp 0", "mcp 1", "mcp 2"]'

"""The tools/call response line the stdio fast path writes (call_response) is the line the
SDK's writer makes from the same result, for every era's serializer."""

from __future__ import annotations

import json
import math

import mcp_types
import pytest
from mcp.shared.message import SessionMessage
from mcp_types.methods import serialize_server_result

from pegboard.gateway.server import answer_line, call_response, call_result
from pegboard.mcp.framing import encode_message
from pegboard.mcp.results import call_result_to_output, output_to_call_result

VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
RESULTS = {
    "text": mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text="hi")]),
    "unicode": mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text='查询天气: sunny \u2028 "q"')]
    ),
    "structured error": mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="{}")],
        structured_content={"n": 1, "nested": [1.5, None, True]},
        is_error=True,
    ),
    "media": mcp_types.CallToolResult(
        content=[
            mcp_types.ImageContent(type="image", data="aGk=", mime_type="image/png"),
            mcp_types.ResourceLink(type="resource_link", uri="file:///a", name="a"),
        ]
    ),
    "not finite": mcp_types.CallToolResult(content=[], structured_content={"x": math.inf}),
}


def sdk_line(request_id: int | str, version: str, result: mcp_types.CallToolResult) -> bytes:
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    payload = serialize_server_result("tools/call", version, dumped)
    message = mcp_types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=payload)
    return encode_message(SessionMessage(message))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", list(RESULTS))
@pytest.mark.parametrize("request_id", [7, "call-é"])
def test_the_line_is_the_one_the_sdks_writer_makes(
    version: str, kind: str, request_id: int | str
) -> None:
    ours = call_response(request_id, version, RESULTS[kind])
    assert ours == sdk_line(request_id, version, RESULTS[kind])
    assert ours.endswith(b"\n")
    assert ours.count(b"\n") == 1
    assert json.loads(ours)["id"] == request_id


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", ["text", "unicode", "structured error", "not finite"])
@pytest.mark.parametrize("request_id", [7, "call-é"])
def test_a_plain_result_written_without_the_serializer_is_the_sdks_line_too(
    version: str, kind: str, request_id: int | str
) -> None:
    """What Gateway.call returns for a plain output is a dict (plain_wire), laid out by
    call_response as the serializer lays it out (its key order, its dropped keys): the line
    the SDK's writer makes from the same output's model."""
    output = call_result_to_output(RESULTS[kind])
    plain = call_result(output)
    assert isinstance(plain, dict)

    line = call_response(request_id, version, plain)
    assert line == sdk_line(request_id, version, output_to_call_result(output))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", list(RESULTS))
@pytest.mark.parametrize("request_id", [7, "call-é"])
def test_an_output_laid_out_at_once_is_the_sdks_line_too(
    version: str, kind: str, request_id: int | str
) -> None:
    """What the stdio fast path writes for a tool's output (answer_line, without the result
    dict between): the line the SDK's writer makes from the output's model, media included
    (through the models), and a value JSON cannot carry as the serializer writes it."""
    output = call_result_to_output(RESULTS[kind])

    line = answer_line(request_id, version, output)
    assert line == sdk_line(request_id, version, output_to_call_result(output))
    assert answer_line(request_id, version, RESULTS[kind]) == call_response(
        request_id, version, RESULTS[kind]
    )

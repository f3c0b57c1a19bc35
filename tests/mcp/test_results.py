"""MCP tool results both ways (the MCP format), part for part."""

from typing import Any

import mcp_types
import pytest

from pegboard.core.output import AudioPart, ImagePart, ResourcePart, TextPart, ToolOutput
from pegboard.mcp.results import (
    call_result_to_output,
    output_to_call_result,
    plain_result,
    plain_wire,
)


def test_every_content_kind_is_kept_as_its_own_part() -> None:
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(text="caption"),
            mcp_types.ImageContent(data="aW1n", mime_type="image/png"),
            mcp_types.AudioContent(data="YXVk", mime_type="audio/wav"),
            mcp_types.EmbeddedResource(
                resource=mcp_types.BlobResourceContents(
                    uri="file:///a.bin", mime_type="application/octet-stream", blob="Ymlu"
                )
            ),
            mcp_types.ResourceLink(name="doc", uri="file:///doc.md", mime_type="text/markdown"),
        ]
    )
    output = call_result_to_output(result)
    assert output.parts == (
        TextPart("caption"),
        ImagePart(data="aW1n", mime_type="image/png"),
        AudioPart(data="YXVk", mime_type="audio/wav"),
        ResourcePart(uri="file:///a.bin", mime_type="application/octet-stream", blob="Ymlu"),
        ResourcePart(uri="file:///doc.md", mime_type="text/markdown", name="doc"),
    )
    assert output.as_text() == (
        "caption\n[image: image/png]\n[audio: audio/wav]\n[resource: file:///a.bin]\n"
        "[resource: file:///doc.md]"
    )
    assert "aW1n" not in output.as_text()


def test_structured_only_result_becomes_json_text_and_structured() -> None:
    result = mcp_types.CallToolResult(content=[], structured_content={"b": 2, "a": "天"})
    output = call_result_to_output(result)
    assert output == ToolOutput(
        parts=(TextPart('{"a": "天", "b": 2}'),), structured={"a": "天", "b": 2}
    )


def test_is_error_is_carried_over_with_the_server_text() -> None:
    result = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(text="quota exceeded")], is_error=True
    )
    output = call_result_to_output(result, metadata={"mcp": {"server_id": "s"}})
    assert output.is_error is True
    assert output.as_text() == "quota exceeded"
    assert output.metadata == {"mcp": {"server_id": "s"}}


def test_every_part_kind_maps_to_its_mcp_content_block() -> None:
    output = ToolOutput(
        parts=(
            TextPart("caption"),
            ImagePart(data="aW1n", mime_type="image/png"),
            AudioPart(data="YXVk", mime_type="audio/wav"),
            ResourcePart(uri="file:///a.txt", mime_type="text/plain", text="body"),
            ResourcePart(uri="file:///b.bin", blob="YmlO"),
            ResourcePart(uri="file:///c", name="c"),
        ),
        structured={"ok": True},
    )

    result = output_to_call_result(output)

    assert result.model_dump(mode="json", by_alias=True, exclude_none=True) == {
        "content": [
            {"type": "text", "text": "caption"},
            {"type": "image", "data": "aW1n", "mimeType": "image/png"},
            {"type": "audio", "data": "YXVk", "mimeType": "audio/wav"},
            {
                "type": "resource",
                "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "body"},
            },
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "YmlO"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c"},
        ],
        "structuredContent": {"ok": True},
        "isError": False,
        "resultType": "complete",
    }


def test_is_error_is_kept_and_non_object_structured_content_is_not_sent() -> None:
    result = output_to_call_result(
        ToolOutput(parts=(TextPart("[1]"),), structured=[1], is_error=True)
    )

    assert (result.is_error, result.structured_content) == (True, None)


def test_an_upstream_result_survives_the_round_trip_through_pegboard() -> None:
    upstream = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(type="text", text="t"),
            mcp_types.ImageContent(type="image", data="aW1n", mime_type="image/png"),
        ],
        structured_content={"n": 1},
        is_error=False,
    )

    assert output_to_call_result(call_result_to_output(upstream)) == upstream


PLAIN = [
    {"content": []},
    {"content": [{"type": "text", "text": "a"}, {"text": "b", "type": "text"}], "isError": True},
    {"content": [{"type": "text", "text": "n"}], "structuredContent": {"n": [1, 2.5, None]}},
    {"content": [], "structuredContent": {"only": "structured"}},
]
NOT_PLAIN = [
    {"content": [{"type": "text", "text": "a", "annotations": {"priority": 1}}]},
    {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]},
    {"content": [{"type": "text", "text": 5}]},
    {"content": [{"type": "text", "text": "a"}], "_meta": {"x": 1}},
    {"content": [], "structuredContent": [1]},
    {"content": "not-a-list"},
    {"content": [], "isError": "yes"},
    {"content": [], "ttlMs": 5},
    {"isError": False},
]


@pytest.mark.parametrize("raw", PLAIN)
def test_a_plain_result_maps_as_the_sdk_models_map_it_both_ways(raw: dict[str, Any]) -> None:
    assert plain_result(raw) is raw
    output = call_result_to_output(raw, metadata={"k": 1})
    assert output == call_result_to_output(
        mcp_types.CallToolResult.model_validate(raw), metadata={"k": 1}
    )
    dumped = output_to_call_result(output).model_dump(by_alias=True, mode="json", exclude_none=True)
    assert plain_wire(output) == dumped


@pytest.mark.parametrize("raw", NOT_PLAIN)
def test_anything_but_text_a_flag_and_a_structured_object_is_left_to_the_models(
    raw: dict[str, Any],
) -> None:
    assert plain_result(raw) is None


def test_an_output_with_media_or_a_structured_list_is_written_by_the_models() -> None:
    assert plain_wire(ToolOutput(parts=(ImagePart(data="aGk=", mime_type="image/png"),))) is None
    assert plain_wire(ToolOutput(parts=(TextPart("t"),), structured=[1])) == {
        "content": [{"type": "text", "text": "t"}],
        "isError": False,
        "resultType": "complete",
    }

"""MCP tool results both ways (the MCP format), part for part."""

import mcp_types

from pegboard.core.output import AudioPart, ImagePart, ResourcePart, TextPart, ToolOutput
from pegboard.mcp.results import call_result_to_output, output_to_call_result


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

import mcp_types

from pegboard.core.output import AudioPart, ImagePart, ResourcePart, TextPart, ToolOutput
from pegboard.gateway.results import output_to_call_result
from pegboard.mcp import call_result_to_output


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

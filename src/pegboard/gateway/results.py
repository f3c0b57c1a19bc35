"""ToolOutput -> MCP ``CallToolResult``, part for part (the reverse of ``pegboard.mcp.results``).

Images, audio and blobs stay binary parts; embedded resources keep URI and MIME type; a
resource without content becomes a resource link; structured content is passed through when it
is a JSON object (MCP requires one) and ``is_error`` is never dropped.
"""

from __future__ import annotations

from typing import Any

import mcp_types

from pegboard.core.output import (
    AudioPart,
    ContentPart,
    ImagePart,
    ResourcePart,
    TextPart,
    ToolOutput,
)


def part_to_content(part: ContentPart) -> mcp_types.ContentBlock:
    if isinstance(part, TextPart):
        return mcp_types.TextContent(type="text", text=part.text)
    if isinstance(part, ImagePart):
        return mcp_types.ImageContent(type="image", data=part.data, mime_type=part.mime_type)
    if isinstance(part, AudioPart):
        return mcp_types.AudioContent(type="audio", data=part.data, mime_type=part.mime_type)
    return _resource(part)


def _resource(part: ResourcePart) -> mcp_types.ContentBlock:
    if part.text is not None:
        text = mcp_types.TextResourceContents(
            uri=part.uri, mime_type=part.mime_type, text=part.text
        )
        return mcp_types.EmbeddedResource(type="resource", resource=text)
    if part.blob is not None:
        blob = mcp_types.BlobResourceContents(
            uri=part.uri, mime_type=part.mime_type, blob=part.blob
        )
        return mcp_types.EmbeddedResource(type="resource", resource=blob)
    return mcp_types.ResourceLink(
        type="resource_link", uri=part.uri, name=part.name or part.uri, mime_type=part.mime_type
    )


def output_to_call_result(output: ToolOutput) -> mcp_types.CallToolResult:
    structured: dict[str, Any] | None = (
        output.structured if isinstance(output.structured, dict) else None
    )
    return mcp_types.CallToolResult(
        content=[part_to_content(p) for p in output.parts],
        structured_content=structured,
        is_error=output.is_error,
    )

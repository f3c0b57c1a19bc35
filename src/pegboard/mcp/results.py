"""MCP ``CallToolResult`` -> :class:`~pegboard.core.output.ToolOutput`, part for part.

Text stays text; images, audio and blobs stay in their own base64 parts (never inside text);
embedded resources keep their URI and MIME type; resource links become resource parts without
content. Structured content is kept as ``structured`` and, when the server sent no text,
also shown as JSON text so a model that only reads text still sees it.
"""

from __future__ import annotations

import json
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


def content_to_part(block: mcp_types.ContentBlock) -> ContentPart:
    if isinstance(block, mcp_types.TextContent):
        return TextPart(block.text)
    if isinstance(block, mcp_types.ImageContent):
        return ImagePart(data=block.data, mime_type=block.mime_type)
    if isinstance(block, mcp_types.AudioContent):
        return AudioPart(data=block.data, mime_type=block.mime_type)
    if isinstance(block, mcp_types.EmbeddedResource):
        res = block.resource
        if isinstance(res, mcp_types.TextResourceContents):
            return ResourcePart(uri=str(res.uri), mime_type=res.mime_type, text=res.text)
        return ResourcePart(uri=str(res.uri), mime_type=res.mime_type, blob=res.blob)
    return ResourcePart(uri=str(block.uri), mime_type=block.mime_type, name=block.name)


def call_result_to_output(
    result: mcp_types.CallToolResult, *, metadata: dict[str, Any] | None = None
) -> ToolOutput:
    """Map a tool result faithfully; ``is_error`` is carried over, never dropped."""
    parts = [content_to_part(block) for block in result.content]
    structured = result.structured_content
    if structured is not None and not any(isinstance(p, TextPart) for p in parts):
        text = json.dumps(structured, ensure_ascii=False, sort_keys=True, default=str)
        parts.insert(0, TextPart(text))
    return ToolOutput(
        parts=tuple(parts),
        is_error=result.is_error,
        structured=structured,
        metadata=dict(metadata or {}),
    )

"""MCP tool results both ways, part for part (both load ``mcp_types`` when called).

MCP result -> :class:`~pegboard.core.output.ToolOutput` (an upstream's answer): text stays
text; images, audio and blobs stay in their own base64 parts (never inside text); embedded
resources keep their URI and MIME type; resource links become resource parts without content.
Structured content is kept as ``structured`` and, when the server sent no text, also shown as
JSON text so a model that only reads text still sees it. ToolOutput -> MCP result (the
gateway's answer): the reverse; a resource without content becomes a resource link; structured
content is passed through when it is a JSON object (MCP requires one); ``is_error`` is never
dropped.

A *plain* result (:func:`plain_result`: text blocks only, ``isError``, a structured object, as
``json.loads`` read it) maps to the same output without the SDK's models, and a plain output
back to the same wire JSON (:func:`plain_wire`): the common ``tools/call`` is read once and
written once.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pegboard.core.output import (
    AudioPart,
    ContentPart,
    ImagePart,
    ResourcePart,
    TextPart,
    ToolOutput,
)

if TYPE_CHECKING:
    import mcp_types

__all__ = ["call_result_to_output", "output_to_call_result", "plain_result", "plain_wire"]

# The keys of a plain result and of its text blocks (anything else: the SDK's models read it).
_PLAIN_KEYS = frozenset({"content", "isError", "structuredContent"})
_TEXT_KEYS = frozenset({"type", "text"})


def plain_result(raw: Any) -> dict[str, Any] | None:
    """``raw`` (a ``tools/call`` result as ``json.loads`` read it) when it is plain: a list
    of text blocks (``type`` and ``text`` only), a boolean ``isError`` if any, a structured
    object if any, nothing else; such a result validates against every protocol version's
    ``CallToolResult`` as it is. None: the SDK's models must read it (images, resources,
    annotations, ``_meta``, a later revision's fields, anything malformed)."""
    if not isinstance(raw, dict) or not raw.keys() <= _PLAIN_KEYS:
        return None
    content = raw.get("content")
    if not isinstance(content, list) or not isinstance(raw.get("isError", False), bool):
        return None
    structured = raw.get("structuredContent")
    if structured is not None and not isinstance(structured, dict):
        return None
    for block in content:
        if (
            not isinstance(block, dict)
            or block.keys() != _TEXT_KEYS
            or block["type"] != "text"
            or not isinstance(block["text"], str)
        ):
            return None
    return raw


# -- results: MCP -> ToolOutput ------------------------------------------------------------
def content_to_part(block: mcp_types.ContentBlock) -> ContentPart:
    import mcp_types  # lazy: the SDK costs ~0.8 s of import time

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
    result: mcp_types.CallToolResult | dict[str, Any], *, metadata: dict[str, Any] | None = None
) -> ToolOutput:
    """Map a tool result faithfully; ``is_error`` is carried over, never dropped. ``result``
    is the SDK's model, or a :func:`plain_result` (read without it)."""
    if isinstance(result, dict):
        parts: list[ContentPart] = [TextPart(block["text"]) for block in result["content"]]
        structured = result.get("structuredContent")
        is_error = bool(result.get("isError", False))
    else:
        parts = [content_to_part(block) for block in result.content]
        structured = result.structured_content
        is_error = result.is_error
    if structured is not None and not any(isinstance(p, TextPart) for p in parts):
        text = json.dumps(structured, ensure_ascii=False, sort_keys=True, default=str)
        parts.insert(0, TextPart(text))
    return ToolOutput(
        parts=tuple(parts),
        is_error=is_error,
        structured=structured,
        metadata=dict(metadata or {}),
    )


# -- results: ToolOutput -> MCP ------------------------------------------------------------
def part_to_content(part: ContentPart) -> mcp_types.ContentBlock:
    import mcp_types

    if isinstance(part, TextPart):
        return mcp_types.TextContent(type="text", text=part.text)
    if isinstance(part, ImagePart):
        return mcp_types.ImageContent(type="image", data=part.data, mime_type=part.mime_type)
    if isinstance(part, AudioPart):
        return mcp_types.AudioContent(type="audio", data=part.data, mime_type=part.mime_type)
    return _resource(part)


def _resource(part: ResourcePart) -> mcp_types.ContentBlock:
    import mcp_types

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
    import mcp_types

    structured: dict[str, Any] | None = (
        output.structured if isinstance(output.structured, dict) else None
    )
    return mcp_types.CallToolResult(
        content=[part_to_content(p) for p in output.parts],
        structured_content=structured,
        is_error=output.is_error,
    )


def plain_wire(output: ToolOutput) -> dict[str, Any] | None:
    """What ``output_to_call_result(output).model_dump(by_alias=True, mode="json",
    exclude_none=True)`` gives, built without the SDK's models, for an output of text parts
    and an optional structured object; None for any other output (the models write it)."""
    content = []
    for part in output.parts:
        if type(part) is not TextPart:
            return None
        content.append({"type": "text", "text": part.text})
    wire: dict[str, Any] = {"content": content}
    if isinstance(output.structured, dict):
        wire["structuredContent"] = output.structured
    wire["isError"] = output.is_error
    wire["resultType"] = "complete"
    return wire

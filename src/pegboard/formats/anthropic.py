"""Anthropic Messages formats: tools, ``tool_use`` blocks and ``tool_result`` blocks.

Inputs may be plain dicts or the ``anthropic`` SDK's objects; outputs are plain dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pegboard.core.entry import ToolEntry
from pegboard.core.output import AudioPart, ImagePart, ResourcePart, TextPart, ToolOutput
from pegboard.deferral.definitions import TOOL_SEARCH
from pegboard.deferral.tool_search import TOOL_REFERENCES
from pegboard.formats.calls import ToolCall, as_dict
from pegboard.formats.naming import checked_name
from pegboard.formats.strict import anthropic_strict_schema

__all__ = [
    "AnthropicMessages",
    "anthropic_tool_result",
    "parse_anthropic_tool_calls",
    "to_anthropic_tools",
]

# Image types the Messages API accepts in a base64 image block.
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def to_anthropic_tools(entries: Iterable[ToolEntry]) -> list[dict[str, Any]]:
    """Messages ``tools``: ``{"name", "description", "input_schema"}`` (+ ``strict``)."""
    tools = []
    for entry in entries:
        tool: dict[str, Any] = {
            "name": checked_name(entry.name, "Anthropic"),
            "description": entry.tool.description,
        }
        if entry.tool.strict:
            tool["input_schema"] = anthropic_strict_schema(
                entry.tool.input_schema, tool_name=entry.name
            )
            tool["strict"] = True
        else:
            tool["input_schema"] = dict(entry.tool.input_schema)
        tools.append(tool)
    return tools


def parse_anthropic_tool_calls(message: Any) -> list[ToolCall]:
    """``tool_use`` blocks of an assistant message (a message or its ``content`` list)."""
    if isinstance(message, list | tuple):
        blocks: Any = message
    else:
        blocks = as_dict(message).get("content") or []
        if isinstance(blocks, str):
            return []
    calls = []
    for raw in blocks:
        block = as_dict(raw)
        if block.get("type") != "tool_use":
            continue
        calls.append(
            ToolCall.parse(
                str(block.get("id") or ""), str(block.get("name") or ""), block.get("input")
            )
        )
    return calls


def anthropic_tool_result(call_id: str, output: ToolOutput) -> dict[str, Any]:
    """A ``tool_result`` content block (goes in a ``role: user`` message).

    Text and supported images become blocks, PDFs become document blocks, other media become
    text placeholders; ``is_error`` is carried over. An empty result has no ``content``.
    """
    blocks: list[dict[str, Any]] = []
    for part in output.parts:
        block = _block(part)
        if block is not None:
            blocks.append(block)
    if not output.parts and output.structured is not None:
        blocks.append({"type": "text", "text": output.as_text()})
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    if blocks:
        result["content"] = blocks
    if output.is_error:
        result["is_error"] = True
    return result


def _block(part: Any) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, ImagePart) and part.mime_type in IMAGE_TYPES:
        source = {"type": "base64", "media_type": part.mime_type, "data": part.data}
        return {"type": "image", "source": source}
    if isinstance(part, ResourcePart):
        if part.text is not None:
            return {"type": "text", "text": part.text} if part.text else None
        if part.blob is not None and part.mime_type == "application/pdf":
            source = {"type": "base64", "media_type": "application/pdf", "data": part.blob}
            return {"type": "document", "source": source}
        return {"type": "text", "text": f"[resource: {part.uri}]"}
    if isinstance(part, ImagePart | AudioPart):
        kind = "image" if isinstance(part, ImagePart) else "audio"
        return {"type": "text", "text": f"[{kind}: {part.mime_type}]"}
    return None


@dataclass(frozen=True)
class AnthropicMessages:
    """Anthropic Messages: tools, ``tool_use`` blocks, one ``role: user`` message of results.

    ``native_loading`` uses the API's deferred loading: deferred tools are sent with
    ``defer_loading: true`` and ``tool_search`` answers with ``tool_reference`` blocks, so the
    model calls what it found directly. Strict tools need no relaxing (Anthropic's strict
    mode keeps optional properties optional).
    """

    native_loading: bool = False
    api: Literal["anthropic"] = "anthropic"

    def tools(
        self, shown: Sequence[ToolEntry], deferred: Sequence[ToolEntry]
    ) -> list[dict[str, Any]]:
        tools = to_anthropic_tools(shown)
        if self.native_loading:
            tools += [{**t, "defer_loading": True} for t in to_anthropic_tools(deferred)]
        return tools

    def parse_calls(self, message: Any) -> list[ToolCall]:
        return parse_anthropic_tool_calls(message)

    def arguments(self, entry: ToolEntry, call: ToolCall) -> dict[str, Any]:
        return call.arguments

    def results(
        self, calls: Sequence[ToolCall], outputs: Sequence[ToolOutput]
    ) -> list[dict[str, Any]]:
        blocks = [self._result(c, o) for c, o in zip(calls, outputs, strict=True)]
        return [{"role": "user", "content": blocks}]

    def _result(self, call: ToolCall, output: ToolOutput) -> dict[str, Any]:
        names = output.metadata.get(TOOL_REFERENCES)
        if self.native_loading and call.name == TOOL_SEARCH and names:
            refs = [{"type": "tool_reference", "tool_name": name} for name in names]
            return {"type": "tool_result", "tool_use_id": call.id, "content": refs}
        return anthropic_tool_result(call.id, output)

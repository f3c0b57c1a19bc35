"""MCP format: registry entries as MCP tool definitions and ``tools/call`` params as calls.

The listing is built as plain JSON dicts (the wire shape, camelCase keys), so a server can
answer ``tools/list`` without the MCP SDK; only :meth:`McpFormat.sdk_tools` and parsing an
SDK params object load ``mcp_types``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pegboard.core.entry import ToolEntry
from pegboard.formats.calls import ToolCall, as_dict

if TYPE_CHECKING:
    import mcp_types

__all__ = [
    "McpFormat",
    "parse_mcp_tool_call",
    "to_mcp_tool",
    "to_mcp_tools",
]

logger = logging.getLogger("pegboard.formats")


@dataclass(frozen=True)
class McpFormat:
    """MCP ``tools/list`` entries and ``tools/call`` params.

    The output schema is included only when it describes an object (MCP before 2026-07-28
    requires that, since ``structuredContent`` is an object). MCP has no strict mode: the
    arguments are used as sent.
    """

    api: Literal["mcp"] = "mcp"

    def tool(self, entry: ToolEntry) -> dict[str, Any]:
        """One entry as the JSON of an MCP ``Tool``."""
        definition = entry.definition
        wire: dict[str, Any] = {"name": definition.name}
        if definition.title is not None:
            wire["title"] = definition.title
        wire["description"] = definition.description
        wire["inputSchema"] = dict(definition.input_schema)
        output = definition.output_schema
        if output and output.get("type") == "object":
            wire["outputSchema"] = dict(output)
        if definition.annotations:
            wire["annotations"] = dict(definition.annotations)
        return wire

    def tools(self, entries: Iterable[ToolEntry]) -> list[dict[str, Any]]:
        return [self.tool(entry) for entry in entries]

    def sdk_tools(self, entries: Iterable[ToolEntry]) -> list[mcp_types.Tool]:
        """The listing as the SDK's models; annotations that do not fit MCP's
        ``ToolAnnotations`` are dropped with a warning rather than failing the listing."""
        return [_sdk_tool(self.tool(entry)) for entry in entries]

    def parse_call(self, params: Any, call_id: str = "") -> ToolCall:
        """A ``tools/call`` request's params (``CallToolRequestParams`` or its JSON)."""
        if isinstance(params, Mapping):
            return ToolCall.parse(call_id, str(params.get("name") or ""), params.get("arguments"))
        data = as_dict(params)
        return ToolCall.parse(call_id, str(data.get("name") or ""), data.get("arguments"))


def _sdk_tool(wire: dict[str, Any]) -> mcp_types.Tool:
    import mcp_types  # lazy: the SDK costs ~0.8 s of import time
    import pydantic

    annotations = wire.pop("annotations", None)
    tool = mcp_types.Tool.model_validate(wire)
    if annotations:
        try:
            tool.annotations = mcp_types.ToolAnnotations.model_validate(annotations)
        except pydantic.ValidationError as exc:
            logger.warning(
                "tool %s: annotations are not valid MCP ToolAnnotations: %s", tool.name, exc
            )
    return tool


_MCP = McpFormat()


def to_mcp_tool(entry: ToolEntry) -> mcp_types.Tool:
    """One entry as an SDK ``mcp_types.Tool``."""
    return _MCP.sdk_tools([entry])[0]


def to_mcp_tools(entries: Iterable[ToolEntry]) -> list[mcp_types.Tool]:
    return _MCP.sdk_tools(entries)


def parse_mcp_tool_call(params: Any, call_id: str = "") -> ToolCall:
    return _MCP.parse_call(params, call_id)

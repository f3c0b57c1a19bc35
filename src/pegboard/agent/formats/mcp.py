"""MCP formats: registry entries as ``mcp_types.Tool`` and ``tools/call`` params as calls.

The reverse directions of results live beside their users: ``pegboard.mcp.results`` (MCP
result -> ToolOutput) and ``pegboard.gateway.results`` (ToolOutput -> MCP result).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import mcp_types
import pydantic

from pegboard.agent.formats.calls import ToolCall, as_dict
from pegboard.core.entry import ToolEntry

__all__ = ["parse_mcp_tool_call", "to_mcp_tool", "to_mcp_tools"]

logger = logging.getLogger("pegboard.agent.formats")


def to_mcp_tool(entry: ToolEntry) -> mcp_types.Tool:
    """One entry as an MCP tool definition.

    The output schema is included only when it describes an object (MCP before 2026-07-28
    requires that, since ``structuredContent`` is an object); annotations that do not fit
    MCP's ``ToolAnnotations`` are dropped with a warning rather than failing the listing.
    """
    tool = entry.tool
    output = tool.output_schema
    return mcp_types.Tool(
        name=entry.name,
        title=tool.title,
        description=tool.description,
        input_schema=dict(tool.input_schema),
        output_schema=dict(output) if output and output.get("type") == "object" else None,
        annotations=_annotations(entry.name, tool.annotations),
    )


def to_mcp_tools(entries: Iterable[ToolEntry]) -> list[mcp_types.Tool]:
    return [to_mcp_tool(entry) for entry in entries]


def _annotations(name: str, raw: Mapping[str, Any] | None) -> mcp_types.ToolAnnotations | None:
    if not raw:
        return None
    try:
        return mcp_types.ToolAnnotations.model_validate(dict(raw))
    except pydantic.ValidationError as exc:
        logger.warning("tool %s: annotations are not valid MCP ToolAnnotations: %s", name, exc)
        return None


def parse_mcp_tool_call(params: Any, call_id: str = "") -> ToolCall:
    """A ``tools/call`` request's params (``CallToolRequestParams`` or its JSON) as a call."""
    if isinstance(params, mcp_types.CallToolRequestParams):
        return ToolCall.parse(call_id, params.name, params.arguments)
    data = as_dict(params)
    return ToolCall.parse(call_id, str(data.get("name") or ""), data.get("arguments"))

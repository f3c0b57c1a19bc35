"""A cached MCP tool as a :class:`ToolDefinition`, read without the MCP SDK.

The catalog's read path (``list_tools``, ``read_tools``, the registry sync, ``tools list``)
works on these frozen definitions built from the raw dicts the store keeps, so a read command
never imports ``mcp``/``mcp_types`` (a second or more of start-up). The SDK validated each raw
dict when it was listed (:func:`pegboard.mcp.listing.tool_problem`); this checks again only
the shape of the fields the read path uses, because the store is a file anyone could edit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pegboard.core.definition import ToolDefinition


def cached_definition(raw: Mapping[str, Any]) -> ToolDefinition:
    """The definition of one raw MCP tool dict; ValueError naming the bad field otherwise."""
    name = raw.get("name")
    if not isinstance(name, str):
        raise ValueError("field 'name' must be a string")
    description = _optional(raw, "description", str)
    title = _optional(raw, "title", str)
    input_schema = raw.get("inputSchema")
    if not isinstance(input_schema, Mapping):
        raise ValueError(f"tool {name!r}: field 'inputSchema' must be an object")
    output_schema = _optional(raw, "outputSchema", Mapping)
    annotations = _optional(raw, "annotations", Mapping)
    return ToolDefinition(
        name=name,
        description=description or "",
        input_schema=dict(input_schema),
        output_schema=dict(output_schema) if output_schema is not None else None,
        # As the SDK model dumped them (exclude_none): an explicit null hint says nothing.
        annotations=(
            {k: v for k, v in annotations.items() if v is not None}
            if annotations is not None
            else None
        ),
        title=title,
    )


def _optional(raw: Mapping[str, Any], key: str, kind: type) -> Any:
    value = raw.get(key)
    if value is not None and not isinstance(value, kind):
        name = raw.get("name")
        raise ValueError(f"tool {name!r}: field {key!r} must be {_KINDS[kind]} or absent")
    return value


_KINDS: dict[type, str] = {str: "a string", Mapping: "an object"}

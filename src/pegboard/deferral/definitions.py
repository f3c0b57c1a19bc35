"""The model-facing definitions of the injected meta-tools.

Kept as constants, apart from the executors, so the exposition can measure their token cost
before it decides to inject them, and so the tool list sent to the model is byte-identical
from turn to turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pegboard.core.definition import ToolDefinition
from pegboard.core.names import TOOL_INVOKE as TOOL_INVOKE
from pegboard.sandbox.tool import EXEC_DESCRIPTION, EXEC_SCHEMA, TOOL_EXEC

DEFAULT_SEARCH_LIMIT = 8
MAX_SEARCH_LIMIT = 50

TOOL_SEARCH = "tool_search"
TOOL_INSPECT = "tool_inspect"
INJECTED_META_TOOLS = (TOOL_SEARCH, TOOL_INSPECT, TOOL_INVOKE)
WITH_EXEC = (*INJECTED_META_TOOLS, TOOL_EXEC)
"""The meta-tools injected when ``tool_exec`` is switched on."""


def injected_meta_tools(tool_exec: bool) -> tuple[str, ...]:
    """The meta-tools deferral injects (without native loading), in listing order."""
    return WITH_EXEC if tool_exec else INJECTED_META_TOOLS


SEARCH_DESCRIPTION = (
    "Find deferred tools (tool discovery, NOT web search), ranked by relevance. `query`: what "
    "the tool should do, or a list (one per step of a task, or other phrasings); omit it to "
    "browse. `namespace`: one namespace only. Returns names and one-line summaries; `verbose` "
    "adds input schemas."
)
SEARCH_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
        },
        "namespace": {"type": "string"},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_SEARCH_LIMIT,
            "default": DEFAULT_SEARCH_LIMIT,
        },
        "verbose": {"type": "boolean", "default": False},
        "offset": {"type": "integer", "minimum": 0, "default": 0},
    },
    "additionalProperties": False,
}

INSPECT_DESCRIPTION = (
    "Show the signature of one deferred tool (its parameters, types, required fields and "
    "allowed values) as a JSDoc stub."
)
INSPECT_DESCRIPTION_EXEC = (
    "Show the signature of one deferred tool (its parameters, types, required fields and "
    "allowed values) as the Python function tool_exec code calls."
)
# ``examples`` (a standard JSON Schema annotation, accepted by every provider's tool schema)
# is the reference design's ``inputExample``: one example call in the definition itself, so a
# model calls the meta-tools right the first time.
INSPECT_EXAMPLE: Mapping[str, Any] = {"name": "mcp__github__create_issue"}
INSPECT_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Exact tool name"}},
    "required": ["name"],
    "additionalProperties": False,
    "examples": [INSPECT_EXAMPLE],
}

INVOKE_DESCRIPTION = (
    "Call a deferred tool by its exact name with its parameters. Inspect it first unless you "
    "already know its parameters; invalid parameters return the error and the signature."
)
INVOKE_EXAMPLE: Mapping[str, Any] = {
    "name": "mcp__github__create_issue",
    "params": {"title": "Login fails"},
}
INVOKE_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Exact tool name"},
        "params": {"type": "object", "additionalProperties": True},
    },
    "required": ["name"],
    "additionalProperties": False,
    "examples": [INVOKE_EXAMPLE],
}

DEFINITIONS: Mapping[str, ToolDefinition] = {
    TOOL_SEARCH: ToolDefinition(TOOL_SEARCH, SEARCH_DESCRIPTION, SEARCH_SCHEMA),
    TOOL_INSPECT: ToolDefinition(TOOL_INSPECT, INSPECT_DESCRIPTION, INSPECT_SCHEMA),
    TOOL_INVOKE: ToolDefinition(TOOL_INVOKE, INVOKE_DESCRIPTION, INVOKE_SCHEMA),
    TOOL_EXEC: ToolDefinition(TOOL_EXEC, EXEC_DESCRIPTION, EXEC_SCHEMA),
}
EXEC_DEFINITIONS: Mapping[str, ToolDefinition] = {
    **DEFINITIONS,
    TOOL_INSPECT: ToolDefinition(TOOL_INSPECT, INSPECT_DESCRIPTION_EXEC, INSPECT_SCHEMA),
}
"""The definitions when ``tool_exec`` is on (``tool_inspect`` then shows Python)."""

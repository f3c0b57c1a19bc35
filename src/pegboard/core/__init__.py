"""Core model: no I/O. Entries, tools, scopes, the registry, wire names, schemas, tokens."""

from typing import TYPE_CHECKING

from pegboard._lazy import lazy_exports

# public name -> submodule, loaded on first use (PEP 562): importing one submodule does not
# import its siblings.
_EXPORTS = {
    "AssistantSettings": "scope",
    "AudioPart": "output",
    "ContentPart": "output",
    "DeferPolicy": "entry",
    "ImagePart": "output",
    "McpMode": "scope",
    "ModelInfo": "scope",
    "NameCollision": "registry",
    "RegistrySnapshot": "registry",
    "ResourcePart": "output",
    "TextPart": "output",
    "Tool": "tool",
    "ToolApplyScope": "scope",
    "ToolContext": "tool",
    "ToolDefinition": "definition",
    "ToolEntry": "entry",
    "ToolOutput": "output",
    "ToolRegistry": "registry",
    "ToolSource": "entry",
    "canonical_json": "definition",
    "to_tool_output": "output",
}

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from pegboard.core.definition import ToolDefinition, canonical_json
    from pegboard.core.entry import DeferPolicy, ToolEntry, ToolSource
    from pegboard.core.output import (
        AudioPart,
        ContentPart,
        ImagePart,
        ResourcePart,
        TextPart,
        ToolOutput,
        to_tool_output,
    )
    from pegboard.core.registry import NameCollision, RegistrySnapshot, ToolRegistry
    from pegboard.core.scope import AssistantSettings, McpMode, ModelInfo, ToolApplyScope
    from pegboard.core.tool import Tool, ToolContext

__all__ = [
    "AssistantSettings",
    "AudioPart",
    "ContentPart",
    "DeferPolicy",
    "ImagePart",
    "McpMode",
    "ModelInfo",
    "NameCollision",
    "RegistrySnapshot",
    "ResourcePart",
    "TextPart",
    "Tool",
    "ToolApplyScope",
    "ToolContext",
    "ToolDefinition",
    "ToolEntry",
    "ToolOutput",
    "ToolRegistry",
    "ToolSource",
    "canonical_json",
    "to_tool_output",
]

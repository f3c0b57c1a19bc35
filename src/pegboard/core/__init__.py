"""Core model: no I/O. Entries, tools, scopes, the registry, wire names, schemas, tokens."""

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

"""pegboard: a tool layer for LLM agents with many tools and MCP servers."""

from pegboard.core import (
    Assistant,
    AssistantSettings,
    ModelInfo,
    Tool,
    ToolApplyScope,
    ToolContext,
    ToolEntry,
    ToolOutput,
    ToolRegistry,
    default_registry,
)
from pegboard.errors import PegboardError

__version__ = "0.1.0"

__all__ = [
    "Assistant",
    "AssistantSettings",
    "ModelInfo",
    "PegboardError",
    "Tool",
    "ToolApplyScope",
    "ToolContext",
    "ToolEntry",
    "ToolOutput",
    "ToolRegistry",
    "default_registry",
]

"""pegboard: a tool layer for LLM agents with many tools and MCP servers."""

from typing import TYPE_CHECKING

from pegboard.agent.params import AgentParams, AgentSession, build_agent_params
from pegboard.core import (
    Assistant,
    AssistantSettings,
    ModelInfo,
    Tool,
    ToolApplyScope,
    ToolContext,
    ToolDefinition,
    ToolEntry,
    ToolOutput,
    ToolRegistry,
    default_registry,
)
from pegboard.errors import PegboardError

if TYPE_CHECKING:
    from pegboard.builtin.plugins import load_tool_entries

__version__ = "0.1.0"

__all__ = [
    "AgentParams",
    "AgentSession",
    "Assistant",
    "AssistantSettings",
    "ModelInfo",
    "PegboardError",
    "Tool",
    "ToolApplyScope",
    "ToolContext",
    "ToolDefinition",
    "ToolEntry",
    "ToolOutput",
    "ToolRegistry",
    "build_agent_params",
    "default_registry",
    "load_tool_entries",
]


def __getattr__(name: str) -> object:
    # Lazy: the built-ins' loader reads the config, whose model imports the MCP SDK, which
    # ``import pegboard`` must not load.
    if name == "load_tool_entries":
        from pegboard.builtin.plugins import load_tool_entries

        return load_tool_entries
    raise AttributeError(f"module 'pegboard' has no attribute {name!r}")

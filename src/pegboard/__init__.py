"""pegboard: a tool layer for LLM agents with many tools and MCP servers."""

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
from pegboard.deferral.tool_exec import ExecSettings
from pegboard.errors import PegboardError
from pegboard.sandbox.limits import ExecLimits

__version__ = "0.1.0"

__all__ = [
    "AgentParams",
    "AgentSession",
    "Assistant",
    "AssistantSettings",
    "ExecLimits",
    "ExecSettings",
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
]

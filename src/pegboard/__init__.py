"""pegboard: a tool layer for LLM agents with many tools and MCP servers.

The names below are loaded on first use (PEP 562), so ``import pegboard`` and the start of a
``pegboard`` command cost no more than the module that is actually needed.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "AgentParams": "pegboard.agent.params",
    "AgentSession": "pegboard.agent.params",
    "build_agent_params": "pegboard.agent.params",
    "Assistant": "pegboard.core",
    "AssistantSettings": "pegboard.core",
    "ModelInfo": "pegboard.core",
    "Tool": "pegboard.core",
    "ToolApplyScope": "pegboard.core",
    "ToolContext": "pegboard.core",
    "ToolDefinition": "pegboard.core",
    "ToolEntry": "pegboard.core",
    "ToolOutput": "pegboard.core",
    "ToolRegistry": "pegboard.core",
    "default_registry": "pegboard.core",
    "PegboardError": "pegboard.errors",
}

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
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pegboard' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:
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

"""pegboard: a tool layer for LLM agents with many tools and MCP servers.

::

    registry = ToolRegistry([ToolEntry("add", "math", Tool.from_function(add))])
    session = AgentSession(approval_handler=CallbackApprovalHandler(ask_user))
    params = build_agent_params(registry, ToolApplyScope(), ModelInfo("gpt-4.1", "openai"),
                                session=session)
    messages += await params.dispatcher.respond(response.choices[0].message)

Importing this package loads neither the MCP SDK, numpy nor the tokenizer.
"""

from pegboard.agent.formats import ToolCall
from pegboard.agent.params import AgentParams, AgentSession, build_agent_params
from pegboard.calls import (
    ApprovalHandler,
    ApprovalRequest,
    CallbackApprovalHandler,
    CallRecord,
    CallSession,
    Decision,
)
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
from pegboard.errors import (
    ApprovalDenied,
    ApprovalRequired,
    CatalogError,
    ConfigError,
    InvalidToolArguments,
    McpError,
    OptionalDependencyMissing,
    PegboardError,
    SchemaError,
    SearchModelError,
    ServerInactive,
    ServerUnavailable,
    ToolError,
    ToolExecutionError,
    ToolNotAllowed,
    ToolNotFound,
)

__version__ = "0.1.0"

__all__ = [
    "AgentParams",
    "AgentSession",
    "ApprovalDenied",
    "ApprovalHandler",
    "ApprovalRequest",
    "ApprovalRequired",
    "Assistant",
    "AssistantSettings",
    "CallRecord",
    "CallSession",
    "CallbackApprovalHandler",
    "CatalogError",
    "ConfigError",
    "Decision",
    "InvalidToolArguments",
    "McpError",
    "ModelInfo",
    "OptionalDependencyMissing",
    "PegboardError",
    "SchemaError",
    "SearchModelError",
    "ServerInactive",
    "ServerUnavailable",
    "Tool",
    "ToolApplyScope",
    "ToolCall",
    "ToolContext",
    "ToolDefinition",
    "ToolEntry",
    "ToolError",
    "ToolExecutionError",
    "ToolNotAllowed",
    "ToolNotFound",
    "ToolOutput",
    "ToolRegistry",
    "build_agent_params",
    "default_registry",
]

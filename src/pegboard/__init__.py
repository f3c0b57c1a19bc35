"""pegboard: a tool layer for LLM agents with many tools and MCP servers.

::

    registry = ToolRegistry([Tool.from_function(add, namespace="math")])
    session = AgentSession(approval_handler=CallbackApprovalHandler(ask_user))
    params = build_agent_params(registry, ToolApplyScope(), ModelInfo("gpt-4.1", "openai"),
                                session=session)
    messages += await params.dispatcher.respond(response.choices[0].message)

    async with open_runtime(profile="work") as runtime:   # the configured MCP servers
        params = build_agent_params(runtime.registry, runtime.scope(), model)

Importing this package loads neither the MCP SDK, numpy nor the tokenizer: the names below are
loaded on first use (PEP 562), so ``import pegboard`` and the start of a ``pegboard`` command
(whose stdio serve answers its first requests before anything heavy loads) stay cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pegboard._lazy import lazy_exports

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "AgentParams": "pegboard.agent.params",
    "AgentSession": "pegboard.agent.params",
    "ApprovalDenied": "pegboard.errors",
    "ApprovalNotPending": "pegboard.errors",
    "ApprovalHandler": "pegboard.calls",
    "ApprovalRequest": "pegboard.calls",
    "ApprovalRequired": "pegboard.errors",
    "AssistantSettings": "pegboard.core",
    "AuditUnavailable": "pegboard.errors",
    "CallRecord": "pegboard.calls",
    "CallSession": "pegboard.calls",
    "CallbackApprovalHandler": "pegboard.calls",
    "CatalogError": "pegboard.errors",
    "StoreError": "pegboard.errors",
    "ConfigError": "pegboard.errors",
    "Decision": "pegboard.calls",
    "ExecLimits": "pegboard.sandbox.limits",
    "ExecSettings": "pegboard.deferral.tool_exec",
    "FileTooLarge": "pegboard.errors",
    "InvalidToolArguments": "pegboard.errors",
    "KnowledgeBaseError": "pegboard.errors",
    "McpError": "pegboard.errors",
    "McpToolError": "pegboard.errors",
    "ModelError": "pegboard.errors",
    "ModelInfo": "pegboard.core",
    "ModelUnavailable": "pegboard.errors",
    "NotStarted": "pegboard.errors",
    "OptionalDependencyMissing": "pegboard.errors",
    "PathNotAllowed": "pegboard.errors",
    "PegboardError": "pegboard.errors",
    "RuntimeComponents": "pegboard.runtime",
    "RateLimited": "pegboard.errors",
    "SchemaError": "pegboard.errors",
    "SearchModelError": "pegboard.errors",
    "ServerInactive": "pegboard.errors",
    "ServerUnavailable": "pegboard.errors",
    "Tool": "pegboard.core",
    "ToolApplyScope": "pegboard.core",
    "ToolCall": "pegboard.formats",
    "ToolContext": "pegboard.core",
    "ToolDefinition": "pegboard.core",
    "ToolEntry": "pegboard.core",
    "ToolError": "pegboard.errors",
    "ToolExecutionError": "pegboard.errors",
    "ToolNotAllowed": "pegboard.errors",
    "ToolNotFound": "pegboard.errors",
    "ToolOutput": "pegboard.core",
    "ToolRegistry": "pegboard.core",
    "ToolRuntime": "pegboard.runtime",
    "Toolset": "pegboard.toolsets",
    "UrlRefused": "pegboard.errors",
    "UserError": "pegboard.errors",
    "build_agent_params": "pegboard.agent.params",
    "load_tool_entries": "pegboard.builtin.plugins",
    "open_runtime": "pegboard.runtime",
}

__all__ = [
    "AgentParams",
    "AgentSession",
    "ApprovalDenied",
    "ApprovalHandler",
    "ApprovalNotPending",
    "ApprovalRequest",
    "ApprovalRequired",
    "AssistantSettings",
    "AuditUnavailable",
    "CallRecord",
    "CallSession",
    "CallbackApprovalHandler",
    "CatalogError",
    "ConfigError",
    "Decision",
    "ExecLimits",
    "ExecSettings",
    "FileTooLarge",
    "InvalidToolArguments",
    "KnowledgeBaseError",
    "McpError",
    "McpToolError",
    "ModelError",
    "ModelInfo",
    "ModelUnavailable",
    "NotStarted",
    "OptionalDependencyMissing",
    "PathNotAllowed",
    "PegboardError",
    "RateLimited",
    "RuntimeComponents",
    "SchemaError",
    "SearchModelError",
    "ServerInactive",
    "ServerUnavailable",
    "StoreError",
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
    "ToolRuntime",
    "Toolset",
    "UrlRefused",
    "UserError",
    "build_agent_params",
    "load_tool_entries",
    "open_runtime",
]


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:
    from pegboard.agent.params import AgentParams, AgentSession, build_agent_params
    from pegboard.builtin.plugins import load_tool_entries
    from pegboard.calls import (
        ApprovalHandler,
        ApprovalRequest,
        CallbackApprovalHandler,
        CallRecord,
        CallSession,
        Decision,
    )
    from pegboard.core import (
        AssistantSettings,
        ModelInfo,
        Tool,
        ToolApplyScope,
        ToolContext,
        ToolDefinition,
        ToolEntry,
        ToolOutput,
        ToolRegistry,
    )
    from pegboard.deferral.tool_exec import ExecSettings
    from pegboard.errors import (
        ApprovalDenied,
        ApprovalNotPending,
        ApprovalRequired,
        AuditUnavailable,
        CatalogError,
        ConfigError,
        FileTooLarge,
        InvalidToolArguments,
        KnowledgeBaseError,
        McpError,
        McpToolError,
        ModelError,
        ModelUnavailable,
        NotStarted,
        OptionalDependencyMissing,
        PathNotAllowed,
        PegboardError,
        RateLimited,
        SchemaError,
        SearchModelError,
        ServerInactive,
        ServerUnavailable,
        StoreError,
        ToolError,
        ToolExecutionError,
        ToolNotAllowed,
        ToolNotFound,
        UrlRefused,
        UserError,
    )
    from pegboard.formats import ToolCall
    from pegboard.runtime import RuntimeComponents, ToolRuntime, open_runtime
    from pegboard.sandbox.limits import ExecLimits
    from pegboard.toolsets import Toolset

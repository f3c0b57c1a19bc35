"""Pure conversions between registry entries and provider formats (OpenAI, Anthropic, MCP).

Each provider module turns :class:`~pegboard.core.entry.ToolEntry` lists into that provider's
tool definitions, parses its tool calls into :class:`ToolCall`, and (for chat providers)
formats a :class:`~pegboard.core.output.ToolOutput` as its tool-result message.
"""

from typing import Any

from pegboard.agent.formats.anthropic import (
    anthropic_tool_result,
    parse_anthropic_tool_calls,
    to_anthropic_tools,
)
from pegboard.agent.formats.calls import ToolCall
from pegboard.agent.formats.openai import (
    chat_tool_result,
    parse_chat_tool_calls,
    parse_responses_tool_calls,
    responses_tool_result,
    to_chat_tools,
    to_responses_tools,
)
from pegboard.agent.formats.strict import (
    anthropic_strict_schema,
    openai_strict_schema,
    relax_strict_arguments,
)

__all__ = [
    "ToolCall",
    "anthropic_strict_schema",
    "anthropic_tool_result",
    "call_result_to_output",
    "chat_tool_result",
    "openai_strict_schema",
    "output_to_call_result",
    "parse_anthropic_tool_calls",
    "parse_chat_tool_calls",
    "parse_mcp_tool_call",
    "parse_responses_tool_calls",
    "relax_strict_arguments",
    "responses_tool_result",
    "to_anthropic_tools",
    "to_chat_tools",
    "to_mcp_tool",
    "to_mcp_tools",
    "to_responses_tools",
]


_MCP_NAMES = frozenset(
    {
        "call_result_to_output",
        "output_to_call_result",
        "parse_mcp_tool_call",
        "to_mcp_tool",
        "to_mcp_tools",
    }
)


def __getattr__(name: str) -> Any:
    # The MCP converters import the MCP SDK's types (~0.8 s); load them only when asked for,
    # so agents that never touch MCP keep a fast ``import pegboard``.
    if name in _MCP_NAMES:
        from pegboard.agent.formats import mcp

        return getattr(mcp, name)
    raise AttributeError(f"module 'pegboard.agent.formats' has no attribute {name!r}")

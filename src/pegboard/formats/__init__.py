"""One format per provider API: OpenAI Chat, OpenAI Responses, Anthropic Messages, MCP.

Each format class owns its API's tool list, call parsing into :class:`ToolCall`, result
formatting and strict/relaxed argument handling (:class:`ProviderFormat`); the module
functions are their pieces. Nothing here imports a provider SDK or (until asked for an SDK
object) the MCP SDK.
"""

from typing import TYPE_CHECKING

from pegboard._lazy import lazy_exports

# public name -> submodule, loaded on first use (PEP 562): a read command that lists MCP
# tools needs the MCP format only, not the provider formats and their strict schemas.
_EXPORTS = {
    "AnthropicMessages": "anthropic",
    "anthropic_tool_result": "anthropic",
    "parse_anthropic_tool_calls": "anthropic",
    "to_anthropic_tools": "anthropic",
    "Api": "base",
    "ProviderFormat": "base",
    "ToolCall": "calls",
    "McpFormat": "mcp",
    "parse_mcp_tool_call": "mcp",
    "to_mcp_tool": "mcp",
    "to_mcp_tools": "mcp",
    "OpenAIChat": "openai",
    "OpenAIResponses": "openai",
    "chat_tool_result": "openai",
    "parse_chat_tool_calls": "openai",
    "parse_responses_tool_calls": "openai",
    "responses_tool_result": "openai",
    "to_chat_tools": "openai",
    "to_responses_tools": "openai",
    "anthropic_strict_schema": "strict",
    "openai_strict_schema": "strict",
    "relax_strict_arguments": "strict",
}


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:
    from pegboard.formats.anthropic import (
        AnthropicMessages,
        anthropic_tool_result,
        parse_anthropic_tool_calls,
        to_anthropic_tools,
    )
    from pegboard.formats.base import (
        Api,
        ProviderFormat,
    )
    from pegboard.formats.calls import (
        ToolCall,
    )
    from pegboard.formats.mcp import (
        McpFormat,
        parse_mcp_tool_call,
        to_mcp_tool,
        to_mcp_tools,
    )
    from pegboard.formats.openai import (
        OpenAIChat,
        OpenAIResponses,
        chat_tool_result,
        parse_chat_tool_calls,
        parse_responses_tool_calls,
        responses_tool_result,
        to_chat_tools,
        to_responses_tools,
    )
    from pegboard.formats.strict import (
        anthropic_strict_schema,
        openai_strict_schema,
        relax_strict_arguments,
    )

__all__ = [
    "AnthropicMessages",
    "Api",
    "McpFormat",
    "OpenAIChat",
    "OpenAIResponses",
    "ProviderFormat",
    "ToolCall",
    "anthropic_strict_schema",
    "anthropic_tool_result",
    "chat_tool_result",
    "format_for",
    "openai_strict_schema",
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


def format_for(api: "Api", *, native_loading: bool = False) -> "ProviderFormat":
    """The format of ``api`` (``native_loading``: Anthropic's deferred loading)."""
    from pegboard.formats.anthropic import AnthropicMessages
    from pegboard.formats.openai import OpenAIChat, OpenAIResponses

    if api == "anthropic":
        return AnthropicMessages(native_loading=native_loading)
    return OpenAIResponses() if api == "openai_responses" else OpenAIChat()

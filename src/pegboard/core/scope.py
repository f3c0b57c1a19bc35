"""The request's facts that a tool entry's ``applies`` reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pegboard.core.names import legacy_mcp_tool_name

McpMode = Literal["disabled", "manual", "auto"]
DestructivePolicy = Literal["ask", "allow"]
"""``ask``: MCP tools annotated ``destructiveHint: true`` (and not ``readOnlyHint``) ask for
approval before each run; ``allow``: they run like any other tool."""
GateReason = Literal["force_prompt", "destructive"]
"""Why a tool asks for approval: listed in ``force_prompt_tools``, or annotated destructive
under ``destructive_tools = "ask"`` (each has its own config fix)."""


# One default for the library and the config file: every enabled server. (Cherry Studio
# defaults to manual; a pegboard config lists its servers on purpose, so hiding them all until
# each profile links them would surprise every user.)
DEFAULT_MCP_MODE: McpMode = "auto"


@dataclass(frozen=True, slots=True)
class AssistantSettings:
    """Per-assistant (profile) tool settings.

    ``disabled_tools`` and ``force_prompt_tools`` hold MCP tool ids (wire names) or
    ``"<server_id>/<tool name>"`` references; :meth:`matches` accepts either form.
    """

    enable_web_search: bool = False
    web_search_provider: str | None = None
    knowledge_base_ids: tuple[str, ...] = ()
    mcp_mode: McpMode = DEFAULT_MCP_MODE
    mcp_server_ids: tuple[str, ...] = ()
    disabled_tools: frozenset[str] = frozenset()
    force_prompt_tools: frozenset[str] = frozenset()
    destructive_tools: DestructivePolicy = "ask"

    def is_tool_disabled(self, wire_name: str, server_id: str, tool_name: str) -> bool:
        return _listed(self.disabled_tools, wire_name, server_id, tool_name)

    def is_force_prompt(self, wire_name: str, server_id: str, tool_name: str) -> bool:
        return _listed(self.force_prompt_tools, wire_name, server_id, tool_name)

    def allows_mcp_tool(self, wire_name: str, server_id: str, tool_name: str) -> bool:
        """Whether the MCP mode selects this tool: ``disabled`` none, ``manual`` the tools of
        the linked servers, ``auto`` every server's; minus the disabled tools."""
        if self.mcp_mode == "disabled":
            return False
        if self.mcp_mode == "manual" and server_id not in self.mcp_server_ids:
            return False
        return not self.is_tool_disabled(wire_name, server_id, tool_name)


def _listed(items: frozenset[str], wire_name: str, server_id: str, tool_name: str) -> bool:
    # The pre-hyphen wire name still matches, so lists written before the rename keep working.
    return (
        wire_name in items
        or f"{server_id}/{tool_name}" in items
        or (bool(items) and legacy_mcp_tool_name(server_id, tool_name) in items)
    )


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """Facts about the model a request goes to."""

    id: str = ""
    provider: str = ""
    context_window: int | None = None


@dataclass(frozen=True, slots=True)
class ToolApplyScope:
    """Everything ``ToolEntry.applies`` may look at for one request.

    ``mcp_tool_ids`` is the set of MCP tools (wire names) this request may use, as
    :func:`~pegboard.mcp.resolve_assistant_mcp_tool_ids` resolves it; an empty set means no
    MCP tool. Omitted (``None``), the assistant's MCP mode decides over the registered MCP
    tools (:meth:`AssistantSettings.allows_mcp_tool`): with the default ``auto`` mode, every
    one not disabled.
    """

    assistant: AssistantSettings = field(default_factory=AssistantSettings)
    mcp_tool_ids: frozenset[str] | None = None
    model: ModelInfo | None = None

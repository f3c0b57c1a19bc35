"""The registry's tools for a profile: ``applies`` holds and the profile has not disabled it."""

from __future__ import annotations

from dataclasses import dataclass

from pegboard.calls.execute import run_entry
from pegboard.calls.session import Call
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import AssistantSettings, ToolApplyScope
from pegboard.toolsets.base import ToolList


def is_disabled(settings: AssistantSettings, entry: ToolEntry) -> bool:
    """Whether the profile's ``disabled_tools`` names ``entry`` (wire name or server/tool)."""
    source = entry.source
    if source is None:
        return entry.name in settings.disabled_tools
    return settings.is_tool_disabled(entry.name, source.server_id, source.tool_name)


@dataclass(frozen=True)
class RegistryToolset:
    """The source toolset: lists the registry's active entries, runs a resolved call."""

    registry: ToolRegistry

    def list_tools(self, scope: ToolApplyScope) -> ToolList:
        snapshot = self.registry.snapshot()
        active = self.registry.select_active(scope)
        shown = tuple(e for e in active if not is_disabled(scope.assistant, e))
        return ToolList(shown=shown, snapshot=snapshot)

    async def call_tool(self, call: Call, tools: ToolList) -> ToolOutput:
        entry = tools.resolve(call.name)
        done = call.checked
        checked = done is not None and done[0] is entry and done[1] is call.arguments
        return await run_entry(entry, call.arguments, call.ctx, checked=checked)

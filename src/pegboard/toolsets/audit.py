"""Audit as a wrapper: exactly one record per call, refused and unknown names included."""

from __future__ import annotations

from dataclasses import dataclass

from pegboard.calls.audit import audited
from pegboard.calls.session import Call
from pegboard.core.output import ToolOutput
from pegboard.toolsets.base import ToolList, WrapperToolset


@dataclass(frozen=True)
class AuditedToolset(WrapperToolset):
    """Hands one :class:`~pegboard.calls.audit.CallRecord` per call to the session's sink."""

    async def call_tool(self, call: Call, tools: ToolList) -> ToolOutput:
        return await audited(call, lambda: self.inner.call_tool(call, tools))

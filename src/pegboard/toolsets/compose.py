"""The one composition every route uses: audit(approval(deferral(source)))."""

from __future__ import annotations

from pegboard.calls.execute import error_output
from pegboard.calls.session import Call
from pegboard.core.output import ToolOutput
from pegboard.errors import PegboardError
from pegboard.toolsets.approval import ApprovalToolset
from pegboard.toolsets.audit import AuditedToolset
from pegboard.toolsets.base import ToolList, Toolset
from pegboard.toolsets.deferral import DeferralSettings, DeferredToolset


def compose(source: Toolset, deferral: DeferralSettings | None = None) -> Toolset:
    """``source`` with deferral (when given), approval and audit around it.

    Audit is outermost so that a call refused anywhere (an unknown name, a disabled tool,
    a denied approval) still leaves its one record.
    """
    inner: Toolset = DeferredToolset(source, settings=deferral) if deferral else source
    return AuditedToolset(ApprovalToolset(inner))


async def call_or_error(toolset: Toolset, tools: ToolList, call: Call) -> ToolOutput:
    """Run ``call``; a pegboard error becomes the model-facing error result (one shape)."""
    try:
        return await toolset.call_tool(call, tools)
    except PegboardError as exc:
        return error_output(exc, tools.lookup)

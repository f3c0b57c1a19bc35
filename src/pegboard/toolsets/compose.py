"""The one composition every route uses: audit(approval(deferral(source)))."""

from __future__ import annotations

from typing import Protocol

from pegboard.calls.execute import error_output
from pegboard.calls.session import Call
from pegboard.core.output import ToolOutput
from pegboard.errors import PegboardError
from pegboard.toolsets.approval import ApprovalToolset
from pegboard.toolsets.audit import AuditedToolset
from pegboard.toolsets.base import ToolList, Toolset
from pegboard.toolsets.deferral import DeferralSettings, DeferralState, DeferredToolset


def compose(
    source: Toolset,
    deferral: DeferralSettings | None = None,
    *,
    state: DeferralState | None = None,
) -> Toolset:
    """``source`` with deferral (when given; ``state`` carries its stickiness across
    listings), approval and audit around it.

    Audit is outermost so that a call refused anywhere (an unknown name, a disabled tool,
    unreadable arguments, a denied approval) still leaves its one record.
    """
    inner: Toolset = source
    if deferral is not None:
        inner = DeferredToolset(source, settings=deferral, state=state or DeferralState())
    return AuditedToolset(ApprovalToolset(inner))


class ToolCaller(Protocol):
    """What runs a call against a listing: a :class:`Toolset`, or one tool's prepared
    :class:`~pegboard.toolsets.plan.CallPlan`."""

    async def call_tool(self, call: Call, tools: ToolList) -> ToolOutput: ...


async def call_or_error(
    toolset: ToolCaller,
    tools: ToolList,
    call: Call,
    *,
    raising: tuple[type[PegboardError], ...] = (),
) -> ToolOutput:
    """Run ``call``; a pegboard error becomes the model-facing error result (one shape),
    except those of ``raising``, which the route handles itself."""
    try:
        return await toolset.call_tool(call, tools)
    except raising:
        raise
    except PegboardError as exc:
        return error_output(exc, tools.lookup)

"""Approval as a wrapper: every call is authorised (the one ``authorise``) before it runs."""

from __future__ import annotations

from dataclasses import dataclass

from pegboard.calls.execute import authorise_call
from pegboard.calls.session import Call
from pegboard.core.output import ToolOutput
from pegboard.core.tracing import span, tracing_on
from pegboard.errors import InvalidToolArguments
from pegboard.toolsets.base import ToolList, WrapperToolset


@dataclass(frozen=True)
class ApprovalToolset(WrapperToolset):
    """Asks the call's session (handler, grants) about gated calls; nothing runs before.

    The arguments are validated first (:func:`~pegboard.calls.execute.authorise_call`), so a
    human is asked only about a call that can run as shown.
    """

    async def call_tool(self, call: Call, tools: ToolList) -> ToolOutput:
        if tracing_on():
            with span("pegboard.resolve", **{"gen_ai.tool.name": call.name}):
                entry = tools.resolve(call.name)
        else:  # no null context entered and left (as in calls.audit.audited)
            entry = tools.resolve(call.name)
        if call.unparsable is not None:  # nothing to approve: the call cannot run as sent
            raise InvalidToolArguments(entry.name, [call.unparsable])
        await authorise_call(call, entry)
        return await self.inner.call_tool(call, tools)

"""A per-tool prepared call plan: what every call of one tool against one listing shares.

A call through the composed toolset (audit(approval(deferral(registry)))) resolves its name
twice, walks three wrappers, finds its tool's argument check and schema defaults, and asks
the approval policy, on every call. For a given listing all of that but the policy's answer
for these arguments is the same each time. :class:`CallPlan` resolves it once per (listing,
name): the entry, its argument check, whether its schema has defaults to fill, whether its
approval policy is the constant "never". A plan is kept on the
:class:`~pegboard.toolsets.base.ToolList` it was made from (:meth:`ToolList.plan`), and every
change that can alter a call makes a new listing (:meth:`ToolSession.refresh
<pegboard.toolsets.session.ToolSession.refresh>` after a catalog change, a profile,
selection or gate change; an access view narrows a listing of its own), so a plan never
outlives what it was resolved from: no second notification path.

What stays per call is what the composed toolset does per call, through the same functions:
one audit record (:func:`~pegboard.calls.audit.audited`; a cancelled call's too), the access
check and rate limits, the validation of this call's arguments, the approval (grants, the
handler, the pending store: :func:`~pegboard.calls.execute.settle_approval`, skipped only for
a tool whose policy is the constant "never"), the run with the tool's own timeout and
cancellation (:func:`~pegboard.calls.execute.run_entry`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pegboard.calls.audit import _audited
from pegboard.calls.execute import authorise_call, run_entry
from pegboard.calls.session import Call
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.quick_check import quick_check
from pegboard.core.schema import compile_arguments_check
from pegboard.errors import InvalidToolArguments, SchemaError

if TYPE_CHECKING:
    from pegboard.toolsets.base import ToolList


class CallPlan:
    """The calls of one tool of one listing (see the module docstring): a toolset of one
    tool, for :func:`~pegboard.toolsets.compose.call_or_error`."""

    __slots__ = ("_quick", "entry")

    def __init__(self, entry: ToolEntry) -> None:
        self.entry = entry
        # The argument check's quick yes (None: every call asks jsonschema), taken only for
        # a schema jsonschema compiles: a schema it refuses fails each call as it does now.
        tool = entry.tool
        try:
            compile_arguments_check(tool.input_schema)
        except SchemaError:
            self._quick: Callable[[Any], bool] | None = None
        else:
            self._quick = quick_check(tool.schema_key)

    @classmethod
    def of(cls, listing: ToolList, name: str) -> CallPlan | None:
        """The plan of the tool ``listing`` calls ``name``, or None when its calls take the
        composed toolset's every step: a name it does not list as it is (unknown, an older
        spelling, not allowed here: the toolset's errors say which), a tool with nothing
        to run."""
        entry = listing.by_name.get(name)
        if entry is None or entry.tool.execute is None:
            return None
        return cls(entry)

    async def call_tool(self, call: Call, tools: ToolList) -> ToolOutput:
        """``call`` of this plan's tool: audited, authorised, validated and run as the
        composed toolset runs it."""
        return await _audited(call, lambda: self._run(call), None)

    async def _run(self, call: Call) -> ToolOutput:
        entry = self.entry
        if call.unparsable is not None:  # nothing to approve: the call cannot run as sent
            raise InvalidToolArguments(entry.name, [call.unparsable])
        arguments = call.arguments
        quick = self._quick
        # (a copy, as validate_arguments gives it: fastjsonschema fills defaults in place)
        if call.interactive and quick is not None and quick(dict(arguments)):
            call.checked = (entry, arguments)  # what authorise_call's own check concludes
        await authorise_call(call, entry)
        checked = call.checked is not None and call.checked[1] is arguments
        return await run_entry(entry, arguments, call.ctx, checked=checked)

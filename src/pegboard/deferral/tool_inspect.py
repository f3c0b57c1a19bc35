"""``tool_inspect``: the signature stub of one tool, recorded in the session's ledger."""

from __future__ import annotations

from typing import Any

from pegboard.calls.execute import stub_of
from pegboard.core.output import ToolOutput
from pegboard.core.tool import Tool, ToolContext
from pegboard.deferral.definitions import INSPECT_DESCRIPTION, INSPECT_SCHEMA, TOOL_INSPECT
from pegboard.deferral.pool import DeferredPool


def make_tool_inspect(pool: DeferredPool) -> Tool:
    """The ``tool_inspect`` tool of one request."""

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return inspect_tool(pool, str(args["name"]))

    return Tool(description=INSPECT_DESCRIPTION, input_schema=INSPECT_SCHEMA, execute=execute)


def inspect_tool(pool: DeferredPool, name: str) -> ToolOutput:
    """The stub of ``name``; raises ToolNotAllowed / ToolNotFound (ledger untouched)."""
    entry = pool.resolve(name, meta_tool=TOOL_INSPECT)
    pool.ledger.record(entry)
    return ToolOutput.text(stub_of(entry))

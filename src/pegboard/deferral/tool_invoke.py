"""``tool_invoke``: call a tool of this request by name, through the shared execution path.

Checks, in order: the name is in this request's allowed set; it is registered; it has an
executor; the arguments validate (else the error plus the signature); the approval gate, in
the outer call's session: a grant given to a direct call of the same call covers it, and a gated
tool is asked about exactly as a direct call would be where the route can ask (else refused
without running: the model must call it directly). A call whose arguments validate runs at
once, inspected before or not. The inner call's id is ``<outer>::<name>`` and its result is
formatted by the inner tool.
"""

from __future__ import annotations

from typing import Any

from pegboard.core.output import ToolOutput
from pegboard.core.tool import Tool, ToolContext
from pegboard.deferral.definitions import INVOKE_DESCRIPTION, INVOKE_SCHEMA, TOOL_INVOKE
from pegboard.deferral.pool import DeferredPool


def make_tool_invoke(pool: DeferredPool) -> Tool:
    """The ``tool_invoke`` tool of one request."""

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return await invoke_tool(pool, str(args["name"]), args.get("params") or {}, ctx)

    return Tool(description=INVOKE_DESCRIPTION, input_schema=INVOKE_SCHEMA, execute=execute)


async def invoke_tool(
    pool: DeferredPool, name: str, params: dict[str, Any], ctx: ToolContext
) -> ToolOutput:
    """Run ``name`` with ``params`` for the model; raises a ToolError when it may not run."""
    return await pool.call(name, params, ctx.child(name), via=TOOL_INVOKE)

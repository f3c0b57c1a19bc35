"""``tool_inspect``: the signature stub of one tool.

With ``tool_exec`` on, the stub is the Python function code calls (``async def <name>(*,
...)``, :func:`~pegboard.sandbox.tool.python_signature`), which also tells ``tool_invoke``
its parameters; otherwise the JSDoc stub.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pegboard.core.output import ToolOutput
from pegboard.core.tool import Tool, ToolContext
from pegboard.deferral.definitions import (
    INSPECT_DESCRIPTION,
    INSPECT_DESCRIPTION_EXEC,
    INSPECT_SCHEMA,
    TOOL_INSPECT,
)
from pegboard.deferral.pool import DeferredPool
from pegboard.sandbox.tool import python_signature

CodeName = Callable[[str], str]
"""Wire name -> the name ``tool_exec`` code calls it by."""


def make_tool_inspect(pool: DeferredPool, code_name: CodeName | None = None) -> Tool:
    """The ``tool_inspect`` tool of one request; ``code_name`` (tool_exec on) shows Python."""

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return inspect_tool(pool.seen_by(ctx), str(args["name"]), code_name)

    description = INSPECT_DESCRIPTION if code_name is None else INSPECT_DESCRIPTION_EXEC
    return Tool(description=description, input_schema=INSPECT_SCHEMA, execute=execute)


def inspect_tool(pool: DeferredPool, name: str, code_name: CodeName | None = None) -> ToolOutput:
    """The stub of ``name``; raises ToolNotAllowed / ToolNotFound."""
    entry = pool.resolve(name, meta_tool=TOOL_INSPECT)
    if code_name is None:
        return ToolOutput.text(entry.definition.stub())
    alias = code_name(entry.name)
    stub = python_signature(entry, alias)
    if alias != entry.name:  # tool_invoke still takes the wire name
        stub = f"# tool_invoke name: {entry.name}\n{stub}"
    return ToolOutput.text(stub)

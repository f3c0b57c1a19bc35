"""``tool_exec(code)``: the meta-tool over the engine, routing every call through one path.

The factory knows entries and the call path, not deferral: the integrator passes the
request's allowed entries and a ``call_tool`` that authorises, validates, runs and audits
(``functools.partial(pool.call, via="tool_exec")`` of the request's
:class:`~pegboard.deferral.DeferredPool`, or :func:`~pegboard.calls.execute_entry` with a
non-interactive :class:`~pegboard.calls.Call`).

Gated tools stay visible to the code (so it learns why, instead of a NameError), and calling
one raises ``PermissionError`` inside the sandbox: ``call_tool`` refuses it without running it
because it authorises non-interactively, the same gate and the same audit record as every
other route. Of the meta-tools only ``tool_search`` is visible (read-only discovery whose
structured answer code can read): no ``tool_exec`` or ``tool_invoke`` inside ``tool_exec``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from pegboard.core.entry import ToolEntry
from pegboard.core.names import META_TOOL_NAMES, python_aliases
from pegboard.core.output import ContentPart, TextPart, ToolOutput
from pegboard.core.pystub import render_python_signature
from pegboard.core.tool import Tool, ToolContext
from pegboard.sandbox.limits import ExecLimits
from pegboard.sandbox.result import ExecResult

# The engine (asyncio, the bridge) loads when a tool_exec tool is made, not when the
# meta-tools' definitions are listed.
if TYPE_CHECKING:
    from pegboard.sandbox.bridge import SandboxTool
    from pegboard.sandbox.engine import Sandbox

TOOL_EXEC = "tool_exec"

CallTool = Callable[[str, dict[str, Any], ToolContext], Awaitable[ToolOutput]]
AllowedEntries = Callable[[ToolContext], Iterable[ToolEntry]] | Iterable[ToolEntry]

EXEC_DESCRIPTION = (
    "Run Python that calls this request's tools: loop, filter and join results in one step "
    "instead of many calls. Each tool is an async function of its name taking keyword "
    'arguments only: `r = await mcp__notes__search(query="x")`; `a, b = await gather(t1(x=1), '
    "t2(y=2))` runs calls in parallel; `await tool_search(query=...)` returns {'tools': "
    "[{'name', 'description'}]}. A tool returns its structured result (dict/list) or its "
    "text. A failed call raises PermissionError (needs the user's approval: call that tool "
    "directly), TypeError (invalid arguments) or RuntimeError. Returns the last expression "
    "and what print wrote. A Python subset (json, re, math, datetime, asyncio); no files, "
    "network or environment. tool_inspect shows a tool's Python signature."
)
EXEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {
            "type": "string",
            "description": "Python; top-level await allowed; the last expression is the result",
        }
    },
    "required": ["code"],
    "additionalProperties": False,
}
EXEC_PROMPT_LINE = (
    "tool_exec({code}): Python calling these tools as `await name(a=..., b=...)` (signature "
    "from tool_inspect) and `gather(...)`: several calls, loops and joins in one step"
)


CODE_META_TOOLS = frozenset({"tool_search"})
"""The meta-tools code may call: discovery only, nothing that runs or inspects by name."""
_HIDDEN_FROM_CODE = META_TOOL_NAMES - CODE_META_TOOLS


def exec_aliases(entries: Iterable[ToolEntry]) -> dict[str, str]:
    """Wire name -> the name ``tool_exec`` code calls it by, for the tools a run exposes
    (every entry but the meta-tools other than :data:`CODE_META_TOOLS`). The engine derives
    the same map from the same names."""
    return python_aliases(e.name for e in entries if e.name not in _HIDDEN_FROM_CODE)


def python_signature(entry: ToolEntry, alias: str | None = None) -> str:
    """How ``tool_exec`` code calls ``entry``: ``async def <alias>(*, a: int, ...)``.

    Pass ``alias=exec_aliases(allowed)[entry.name]`` so the name matches the run's exactly;
    without it the alias is derived from this name alone (the same unless two of the
    request's names would collide).
    """
    tool = entry.tool
    return render_python_signature(
        alias or python_aliases([entry.name])[entry.name],
        tool.description,
        tool.input_schema,
        tool.output_schema,
    )


def make_tool_exec(
    call_tool: CallTool,
    allowed: AllowedEntries,
    limits: ExecLimits | None = None,
    *,
    sandbox: Sandbox | None = None,
) -> Tool:
    """The ``tool_exec`` tool of one request.

    ``call_tool(name, args, ctx)`` runs one call and returns its :class:`ToolOutput`, raising
    a ``ToolError`` when the call may not or cannot run; it must authorise without asking a
    human (a gated call raises ``ApprovalRequired`` and is not run). ``allowed`` is the
    request's allowed entries, or a function of the run's context returning them (what its
    principal may call), read at each run. Each inner
    call gets the context ``<outer call id>::<name>#<n>``.
    """
    from pegboard.sandbox.engine import run_code

    bounds = limits or ExecLimits()

    async def execute(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        names = list(exec_aliases(allowed(ctx) if callable(allowed) else allowed))
        sequence = itertools.count(1)

        def bind(name: str) -> SandboxTool:
            async def call(**kwargs: Any) -> ToolOutput:
                return await call_tool(name, kwargs, ctx.child(f"{name}#{next(sequence)}"))

            return call

        tools = {name: bind(name) for name in names}
        result = await run_code(str(args["code"]), tools, bounds, sandbox=sandbox)
        return exec_output(result)

    return Tool(description=EXEC_DESCRIPTION, input_schema=EXEC_SCHEMA, execute=execute)


def exec_output(result: ExecResult) -> ToolOutput:
    """What the model reads: the value as JSON, then printed text; images as their own parts.

    ``structured`` carries the value, printed text and the call log for programmatic callers.
    """
    lines: list[str] = []
    if result.error is not None:
        lines.append(f"tool_exec failed: {result.error}")
    else:
        lines.append(json.dumps(result.value, ensure_ascii=False, default=repr))
    if result.printed:
        lines.append(f"printed:\n{result.printed.rstrip()}")
    failed = sum(1 for c in result.calls if not c.ok)
    if result.calls:
        lines.append(f"tool calls: {len(result.calls)}" + (f" ({failed} failed)" if failed else ""))
    parts: list[ContentPart] = [TextPart("\n".join(lines)), *result.images]
    structured = {
        "result": json.loads(json.dumps(result.value, ensure_ascii=False, default=repr)),
        "printed": result.printed,
        "error": result.error,
        "calls": [
            {"name": c.name, "ok": c.ok, "seconds": round(c.seconds, 6), "error": c.error}
            for c in result.calls
        ],
    }
    return ToolOutput(parts=tuple(parts), is_error=not result.ok, structured=structured)

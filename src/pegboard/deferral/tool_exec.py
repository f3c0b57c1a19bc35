"""``tool_exec`` of one request: the sandbox over the request's allowed tools, one call path.

Every call the code makes goes through :meth:`DeferredPool.run_inner` (``execute_entry`` with
``Call(via="tool_exec", interactive=False)`` in the outer call's ``CallSession``): the same
resolve (the request's allowed set, never the whole registry), approval (a gated tool is
refused without running: it raises ``PermissionError`` in the code) and audit record as any
other route. ``tool_search`` is callable from code too (read-only discovery); the other
meta-tools are not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.tool import Tool, ToolContext
from pegboard.deferral.definitions import TOOL_SEARCH
from pegboard.deferral.pool import DeferredPool
from pegboard.sandbox.limits import ExecLimits
from pegboard.sandbox.tool import TOOL_EXEC, exec_aliases, make_tool_exec

if TYPE_CHECKING:  # the engine loads when a run starts
    from pegboard.sandbox.engine import Sandbox


@dataclass(frozen=True)
class ExecSettings:
    """``tool_exec`` switched on: the limits of every run and the sandbox the runs share.

    ``sandbox`` None uses the process-wide :func:`~pegboard.sandbox.default_sandbox`; either
    way no worker starts before the first run.
    """

    limits: ExecLimits = field(default_factory=ExecLimits)
    sandbox: Sandbox | None = None


@dataclass(frozen=True)
class CodeTools:
    """What code may call in one request: the allowed entries plus ``tool_search``."""

    pool: DeferredPool
    search: ToolEntry

    def entries(self, ctx: ToolContext | None = None) -> list[ToolEntry]:
        """What code may call (as ``ctx``'s principal sees the pool, when given)."""
        pool = self.pool.seen_by(ctx) if ctx is not None else self.pool
        found = (pool.lookup(name) for name in sorted(pool.allowed))
        return [self.search, *(e for e in found if e is not None)]

    async def call(self, name: str, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """One call from code, non-interactive, through the pool's one inner-call path."""
        if name != TOOL_SEARCH:
            return await self.pool.seen_by(ctx).call(name, args, ctx, via=TOOL_EXEC)
        return await self.pool.run_inner(self.search, args, ctx, via=TOOL_EXEC)


def code_tools(pool: DeferredPool, search: Tool) -> CodeTools:
    return CodeTools(pool, ToolEntry(name=TOOL_SEARCH, namespace="meta", tool=search))


def make_pool_tool_exec(tools: CodeTools, settings: ExecSettings) -> Tool:
    """The ``tool_exec`` tool of one request (see the module docstring)."""
    return make_tool_exec(tools.call, tools.entries, settings.limits, sandbox=settings.sandbox)


def alias_lookup(tools: CodeTools) -> Callable[[str], str]:
    """Wire name -> the name code calls it by, computed once on first use (it depends on
    every name of the request: aliases are collision-free within it)."""

    @cache
    def aliases() -> Mapping[str, str]:
        return exec_aliases(tools.entries())

    def alias(name: str) -> str:
        return aliases().get(name, name)

    return alias

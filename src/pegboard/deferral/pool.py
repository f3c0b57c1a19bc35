"""What the meta-tools of one request share: the deferred pool and the allowed set.

The allowed set (every tool ``tool_invoke`` may reach in this request) is fixed when the
exposition is applied; meta-tool names are never in it. Names resolve exactly: a near miss
(other case, trailing space, homoglyph, ``server.tool``) is never mapped onto a tool, it only
produces suggestions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pegboard.calls.execute import execute_entry
from pegboard.calls.session import Call, CallSession
from pegboard.core.entry import ToolEntry
from pegboard.core.names import META_TOOL_NAMES, strip_mcp_namespace
from pegboard.core.output import ToolOutput
from pegboard.core.registry import RegistrySnapshot
from pegboard.core.resolve import fold_name, resolve_name, suggest_names
from pegboard.core.tokens import TokenCounter, default_token_counter
from pegboard.core.tool import ToolContext
from pegboard.deferral.definitions import TOOL_INVOKE
from pegboard.errors import ToolError
from pegboard.search.interface import SearchIndex


@dataclass(frozen=True)
class DeferredPool:
    """The per-request state behind ``tool_search``, ``tool_inspect`` and ``tool_invoke``."""

    snapshot: RegistrySnapshot
    deferred: tuple[ToolEntry, ...]
    allowed: frozenset[str]
    index: SearchIndex
    session: CallSession = field(default_factory=CallSession)
    counter: TokenCounter = field(default_factory=default_token_counter)

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed", self.allowed - META_TOOL_NAMES)

    @cached_property
    def deferred_names(self) -> frozenset[str]:
        return frozenset(e.name for e in self.deferred)

    def lookup(self, name: str) -> ToolEntry | None:
        return self.snapshot.get(name)

    def resolve(self, name: str, *, meta_tool: str) -> ToolEntry:
        """The entry ``meta_tool`` may act on, by exact name, or raise.

        Checks, in order: not a meta-tool; in the allowed set (a registered tool outside it
        is "not available in this request"); registered. Unknown names get suggestions.
        """
        if name in META_TOOL_NAMES:
            raise ToolError(
                f"{meta_tool} cannot act on the meta-tool {name}; call {name} directly.",
                tool_name=name,
            )
        found = self.snapshot.get(name) if name in self.allowed else None
        return resolve_name(name, found, self.allowed, self.snapshot)

    async def call(
        self, name: str, args: Mapping[str, Any], ctx: ToolContext, *, via: str
    ) -> ToolOutput:
        """A meta-tool's inner call (``tool_invoke``, ``tool_exec``): resolve ``name`` in
        this request, then authorise, validate, run and audit it through
        :func:`~pegboard.calls.execute.execute_entry`. ``ctx`` is the inner call's own
        context (``ctx.child(name)`` of the meta-tool's)."""
        return await self.run_inner(self.resolve(name, meta_tool=via), args, ctx, via=via)

    async def run_inner(
        self, entry: ToolEntry, args: Mapping[str, Any], ctx: ToolContext, *, via: str
    ) -> ToolOutput:
        """The one constructor of inner calls. They run in the outer call's session
        (``ctx.call_session``: its handler, grants and audit), so "allow for this session"
        given to a direct call covers the same call through ``tool_invoke``. A gated tool
        through ``tool_invoke`` is asked about exactly as a direct call is wherever the route
        can ask (its session has a handler), else refused; ``tool_exec`` code never asks
        (a gated tool not granted raises ``PermissionError`` in the code)."""
        session = ctx.call_session if isinstance(ctx.call_session, CallSession) else self.session
        asks = via == TOOL_INVOKE and session.approval_handler is not None
        call = Call(entry.name, args, ctx, via, session, interactive=asks)
        return await execute_entry(entry, call)

    def namespaces(self) -> dict[str, str]:
        """Raw namespace -> label of the deferred entries, sorted by label."""
        found = {e.namespace: e.label for e in self.deferred}
        return dict(sorted(found.items(), key=lambda item: (item[1], item[0])))

    def resolve_namespace(self, wanted: str) -> frozenset[str]:
        """Raw namespaces matching ``wanted`` (raw id or label; ``mcp:`` optional; any case)."""
        known = self.namespaces()
        exact = {raw for raw, label in known.items() if wanted in (raw, label)}
        if exact:
            return frozenset(exact)
        folded = fold_name(strip_mcp_namespace(wanted))
        return frozenset(
            raw
            for raw, label in known.items()
            if folded
            in (fold_name(strip_mcp_namespace(raw)), fold_name(strip_mcp_namespace(label)))
        )

    def suggestions(self, name: str) -> list[str]:
        return suggest_names(name, self.allowed, self.snapshot)

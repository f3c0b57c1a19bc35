"""What every framework integration shares: where the tools come from and the one call path.

A :class:`ToolBridge` holds a registry, the scope to list it for, and the conversation's
:class:`~pegboard.calls.CallSession` (audit, grants). Each integration lists through
:meth:`ToolBridge.listing` (the composed toolset of :mod:`pegboard.toolsets`, deferral applied
for a context window) and calls through :meth:`ToolBridge.call`, so resolve, approval,
validation and audit are the same steps the dispatcher, the gateway and the CLI take.

Approval belongs to the framework (pydantic-ai's deferred approval, the Agents SDK's
interruptions): it asks :meth:`ToolBridge.is_gated` whether to pause, and passes its answer
back as ``approved``, which the call's approval handler returns to
:func:`~pegboard.calls.authorise` for exactly that tool. Nothing else is approved: a call the
framework did not approve is refused by pegboard whatever the framework does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from pegboard.calls.approval import ApprovalHandler, ApprovalRequest, Decision, is_approval_gated
from pegboard.calls.audit import AuditSink
from pegboard.calls.session import Call, CallSession
from pegboard.core.names import META_TOOL_NAMES
from pegboard.core.output import ToolOutput
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ToolApplyScope
from pegboard.core.tool import ToolContext
from pegboard.deferral.tool_exec import ExecSettings
from pegboard.errors import ApprovalDenied, NotStarted
from pegboard.search.interface import SearchIndex
from pegboard.toolsets import DeferralSettings, RegistryToolset, StatusSource, ToolList, Toolset
from pegboard.toolsets import compose as compose_toolset

if TYPE_CHECKING:
    from pegboard.runtime import ToolRuntime


class SourceOptions(TypedDict, total=False):
    """Where an integration's tools come from, besides the profile (see :meth:`ToolBridge.open`)."""

    registry: ToolRegistry | None
    scope: ToolApplyScope | None
    config: str | Path | None
    context_window: int | None
    audit: AuditSink | None


@dataclass(frozen=True)
class Listing:
    """One listing: the composed toolset and the tools it listed (calls resolve against it)."""

    toolset: Toolset
    tools: ToolList


@dataclass(frozen=True)
class FrameworkApproval:
    """The approval handler of one call: the framework's answer, for that tool only.

    The inner call of ``tool_invoke`` is never interactive, so it never gets here; a request
    for another tool than the one the framework approved is refused.
    """

    tool_name: str
    approved: bool

    async def request_approval(self, request: ApprovalRequest) -> Decision:
        if self.approved and request.tool_name == self.tool_name:
            return "allow_once"
        raise ApprovalDenied(
            f"Tool {request.tool_name} needs approval and the application did not approve "
            "this call; it was not run.",
            tool_name=request.tool_name,
        )


@dataclass
class ToolBridge:
    """A registry, its scope and the conversation's call session, for one integration."""

    registry: ToolRegistry
    scope: Callable[[], ToolApplyScope]
    session: CallSession = field(default_factory=CallSession)
    context_window: int | None = None
    defer: bool = True
    index: SearchIndex | None = None
    statuses: StatusSource | None = None
    runtime: ToolRuntime | None = None
    tool_exec: ExecSettings | None = None  # the config's tool_exec, as `pegboard serve` offers
    sticky: bool = False
    _users: int = field(default=0, repr=False)
    _catalog: AsyncExitStack | None = field(default=None, repr=False)

    @classmethod
    def open(cls, profile: str | None = None, **options: Unpack[SourceOptions]) -> ToolBridge:
        """``registry`` and ``scope`` as given, or else the profile of ``config`` (the default
        config and profile when both are None), as ``pegboard serve`` loads them.
        ``context_window`` applies when the model's own is not known; ``audit`` receives one
        :class:`~pegboard.calls.CallRecord` per call."""
        registry, scope = options.get("registry"), options.get("scope")
        context_window, audit = options.get("context_window"), options.get("audit")
        if registry is not None:
            fixed = scope or ToolApplyScope()
            return cls(registry, lambda: fixed, CallSession(audit=audit), context_window)
        from pegboard.config import load_config
        from pegboard.runtime import RuntimeOptions, ToolRuntime

        runtime_options = RuntimeOptions(profile, context_window=context_window, audit=audit)
        runtime = ToolRuntime(load_config(options.get("config")), runtime_options)
        return cls(
            runtime.registry,
            runtime.scope,
            runtime.calls,
            runtime.context_window,
            defer=runtime.surface.defer,
            index=runtime.index,
            statuses=runtime.namespace_statuses,
            runtime=runtime,
            tool_exec=runtime.surface.tool_exec,
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ToolBridge]:
        """Run the MCP catalog behind a config's tools (nothing to run for a registry).

        Re-entrant: the catalog starts with the first user and stops with the last. Its
        task group must end in the task that started it, so for concurrent agent runs enter
        once around them (``async with toolset:``) rather than only inside each run.
        """
        self._users += 1
        try:
            if self._users == 1 and self.runtime is not None:
                stack = AsyncExitStack()
                await stack.enter_async_context(self.runtime.running())
                self._catalog = stack
            yield self
        finally:
            self._users -= 1
            if self._users == 0 and self._catalog is not None:
                catalog, self._catalog = self._catalog, None
                await catalog.aclose()

    def listing(self, context_window: int | None = None) -> Listing:
        """The tools for this moment, deferred for ``context_window`` (else the bridge's)."""
        deferral = None
        if self.defer:
            deferral = DeferralSettings(
                self.registry,
                context_window=context_window or self.context_window,
                session=self.session,
                index=self.index,
                statuses=self.statuses,
                sticky=self.sticky,
                tool_exec=self.tool_exec,
            )
        toolset = compose_toolset(RegistryToolset(self.registry), deferral)
        tools = toolset.list_tools(self.scope())
        self.sticky = tools.auto_deferred
        return Listing(toolset, tools)

    def require_running(self, listing: Listing, name: str) -> None:
        """Raise :class:`~pegboard.errors.NotStarted` if calling ``name`` needs an MCP server
        and the config's servers are not running (the tools were used outside ``async with``).

        Not started on first use instead: the servers' task group must end in the task that
        started it, so a server started inside one tool call would have to stop when that
        call ends (a cold ``npx -y`` start per call), or outlive it with no owner to stop it.
        """
        if self.runtime is None or self._users > 0:
            return
        entry = listing.tools.get(name)
        reaches_mcp = name in META_TOOL_NAMES or (entry is not None and entry.source is not None)
        if not reaches_mcp or not any(s.enabled for s in self.runtime.catalog.servers()):
            return
        raise NotStarted(
            f"{name} needs pegboard's MCP servers, which are not running: use the tools inside "
            "`async with tools:` (pegboard_tools(), pegboard_langchain_tools()) or "
            "`async with toolset:` (PegboardToolset), which starts the servers and stops them "
            "at the end"
        )

    def context(self, call_id: str) -> ToolContext:
        return ToolContext(call_id=call_id, session_id=self.session.session_id, scope=self.scope())

    async def is_gated(self, tools: ToolList, name: str, arguments: Mapping[str, Any]) -> bool:
        """Whether calling ``name`` with ``arguments`` needs a human's yes (pause first)."""
        entry = tools.get(name)
        if entry is None:
            return False
        return await is_approval_gated(entry.tool, arguments, self.context(""))

    async def call(
        self,
        listing: Listing,
        name: str,
        arguments: Mapping[str, Any],
        call_id: str,
        *,
        via: str,
        approved: bool = False,
        handler: ApprovalHandler | None = None,
    ) -> ToolOutput:
        """Run one call through the listing's toolset; raises pegboard's errors.

        ``approved`` is the framework's approval of this very call; ``handler`` (instead)
        asks someone now, as :func:`~pegboard.agent.build_agent_params` does.
        """
        session = CallSession(
            approval_handler=handler or FrameworkApproval(name, approved),
            grants=self.session.grants,
            audit=self.session.audit,
            session_id=self.session.session_id,
        )
        call = Call(name, dict(arguments), self.context(call_id), via, session)
        return await listing.toolset.call_tool(call, listing.tools)

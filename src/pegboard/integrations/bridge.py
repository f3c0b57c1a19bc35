"""What every framework integration shares: where the tools come from and the one call path.

A :class:`ToolBridge` holds a registry, the scope to list it for, and the conversation's
:class:`~pegboard.toolsets.session.ToolSession` (audit, grants, deferral). Each integration
lists through :meth:`ToolBridge.listing` and calls through :meth:`ToolBridge.call`, so resolve,
approval, validation and audit are the same steps the dispatcher, the gateway and the CLI take.

Approval belongs to the framework (pydantic-ai's deferred approval, the Agents SDK's
interruptions): it asks :meth:`ToolBridge.pending_gate` whether to pause (and for which tool:
``tool_invoke``'s inner one too; a call granted earlier in the session needs no pause), and
passes its answer back as a :class:`FrameworkApproval`, which
:func:`~pegboard.calls.authorise` gets for exactly that tool. The policy is evaluated once per
call. Nothing else is approved: a call the framework did not approve is refused by pegboard
whatever the framework does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from pegboard.calls.approval import ApprovalHandler, ApprovalRequest, Decision
from pegboard.calls.audit import AuditSink
from pegboard.calls.session import CallSession
from pegboard.core.names import META_TOOL_NAMES
from pegboard.core.output import ToolOutput
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ToolApplyScope
from pegboard.deferral.tool_exec import ExecSettings
from pegboard.errors import ApprovalDenied, NotStarted, PegboardError
from pegboard.search.interface import SearchIndex
from pegboard.toolsets import StatusSource, ToolList
from pegboard.toolsets.session import Deferral, ToolSession

if TYPE_CHECKING:
    from pegboard.runtime import ToolRuntime


class SourceOptions(TypedDict, total=False):
    """Where an integration's tools come from, besides the profile (see :meth:`ToolBridge.open`)."""

    registry: ToolRegistry | None
    scope: ToolApplyScope | None
    config: str | Path | None
    context_window: int | None
    audit: AuditSink | None


Listing = ToolList  # one listing: what a framework was given; calls resolve against it


@dataclass(frozen=True)
class FrameworkApproval:
    """The approval handler of one call: the framework's answer, for that tool only.

    ``tool_name`` is the tool the framework paused for (``tool_invoke``'s inner tool when the
    call goes through it); ``decision`` is what its yes covers (``allow_session`` when the
    application approved for the session). A request for another tool is refused.
    """

    tool_name: str
    approved: bool
    decision: Decision = "allow_once"
    name: str = "framework"

    async def request_approval(self, request: ApprovalRequest) -> Decision:
        if self.approved and request.tool_name == self.tool_name:
            return self.decision
        raise ApprovalDenied(
            f"Tool {request.tool_name} needs approval and the application did not approve "
            "this call; it was not run.",
            tool_name=request.tool_name,
        )


@dataclass
class ToolBridge:
    """A registry, its scope and the conversation's tool session, for one integration."""

    registry: ToolRegistry
    scope: Callable[[], ToolApplyScope]
    session: CallSession = field(default_factory=CallSession)
    context_window: int | None = None
    defer: bool = True
    index: SearchIndex | None = None
    statuses: StatusSource | None = None
    runtime: ToolRuntime | None = None
    tool_exec: ExecSettings | None = None  # the config's tool_exec, as `pegboard serve` offers
    _users: int = field(default=0, repr=False)
    _catalog: AsyncExitStack | None = field(default=None, repr=False)
    tools: ToolSession = field(init=False, repr=False)
    paused: dict[str, str] = field(default_factory=dict, repr=False)  # call id -> tool

    def __post_init__(self) -> None:
        deferral = None
        if self.defer:
            deferral = Deferral(self.context_window, self.index, self.statuses, self.tool_exec)
        self.tools = ToolSession(self.registry, self.scope, self.session, deferral)

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
        self.tools.refresh(context_window=context_window)
        return self.tools.tools

    def require_running(self, listing: Listing, name: str) -> None:
        """Raise :class:`~pegboard.errors.NotStarted` if calling ``name`` needs an MCP server
        and the config's servers are not running (the tools were used outside ``async with``).

        Not started on first use instead: the servers' task group must end in the task that
        started it, so a server started inside one tool call would have to stop when that
        call ends (a cold ``npx -y`` start per call), or outlive it with no owner to stop it.
        """
        if self.runtime is None or self._users > 0:
            return
        entry = listing.get(name)
        reaches_mcp = name in META_TOOL_NAMES or (entry is not None and entry.source is not None)
        if not reaches_mcp or not any(s.enabled for s in self.runtime.catalog.servers()):
            return
        raise NotStarted(
            f"{name} needs pegboard's MCP servers, which are not running: use the tools inside "
            "`async with tools:` (pegboard_tools(), pegboard_langchain_tools()) or "
            "`async with toolset:` (PegboardToolset), which starts the servers and stops them "
            "at the end"
        )

    async def pending_gate(
        self, listing: Listing, name: str, arguments: Mapping[str, Any], call_id: str
    ) -> str | None:
        """The tool the framework must pause for before this call (see
        :meth:`~pegboard.toolsets.session.ToolSession.pending_gate`), or None."""
        return await self.tools.pending_gate(name, arguments, call_id, tools=listing)

    async def call(
        self,
        listing: Listing,
        name: str,
        arguments: Mapping[str, Any],
        call_id: str,
        *,
        via: str,
        approved: FrameworkApproval | None = None,
        handler: ApprovalHandler | None = None,
        unparsable: str | None = None,
        raising: tuple[type[PegboardError], ...] = (),
    ) -> ToolOutput:
        """Run one call through the tool session; errors become the error output except
        those of ``raising``.

        ``approved`` is the framework's answer about this very call; ``handler`` (instead)
        asks someone now, as :func:`~pegboard.agent.build_agent_params` does.
        """
        return await self.tools.call(
            name,
            arguments,
            call_id,
            via=via,
            tools=listing,
            approval=handler or approved or FrameworkApproval(name, False),
            unparsable=unparsable,
            raising=raising,
        )

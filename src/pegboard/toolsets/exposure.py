"""The registry's tools for one profile, as ``pegboard serve`` exposes them.

:class:`RegistrySurface` is the :class:`~pegboard.gateway.surface.ToolSurface` of ``pegboard
serve`` and what the CLI calls through: the MCP face of one
:class:`~pegboard.toolsets.session.ToolSession`, recomputing the listing only when told the
registry or the scope changed (:meth:`refresh`), so ``tools/list`` is a read of a prepared
list; it tells its listeners only when that list really changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pegboard.calls.approval import ApprovalHandler, ApprovalPending
from pegboard.calls.execute import error_output
from pegboard.calls.session import CallSession
from pegboard.core.access import AccessView
from pegboard.core.entry import ToolEntry
from pegboard.core.events import EventBus, ToolListChanged
from pegboard.core.output import ToolOutput
from pegboard.core.principal import Principal
from pegboard.core.redact import escape_markup
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import GateReason, ToolApplyScope
from pegboard.core.status import NamespaceStatus
from pegboard.core.tool import is_destructive
from pegboard.errors import ApprovalRequired
from pegboard.formats.mcp import McpFormat
from pegboard.search.interface import SearchIndex
from pegboard.toolsets import StatusSource, ToolList, Toolset
from pegboard.toolsets.session import Deferral, ToolSession

if TYPE_CHECKING:
    import mcp_types

    from pegboard.deferral.apply import Exposition
    from pegboard.deferral.tool_exec import ExecSettings

logger = logging.getLogger("pegboard.gateway")

ChangeListener = Callable[[], None]

VIA = "gateway"
_FORMAT = McpFormat()


class RegistrySurface:
    """Expose ``registry.select_active(scope())``, deferring large pools behind meta-tools.

    The MCP face of one :class:`~pegboard.toolsets.session.ToolSession`: every client
    connection calls through it with its own session id (its grants' scope and audit
    session) and approval handler.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        scope: Callable[[], ToolApplyScope],
        *,
        context_window: int | None = None,
        defer: bool = True,
        statuses: StatusSource | None = None,
        session: CallSession | None = None,
        index: SearchIndex | None = None,
        tool_exec: ExecSettings | None = None,
        events: EventBus | None = None,
    ) -> None:
        self.events = events if events is not None else EventBus()
        self.tool_exec = tool_exec
        self.defer = defer
        self._context_window = context_window
        self._statuses = statuses
        deferral = None
        if defer:
            # Sticky: once deferred, a pool hovering around the threshold stays deferred, so
            # clients do not see the whole list flip in and out as servers warm.
            deferral = Deferral(context_window, index, statuses, tool_exec)
        self.tool_session = ToolSession(registry, scope, session or CallSession(), deferral)
        self._listed: list[ToolEntry] = []
        # The MCP JSON of a listing, made on its first read (a read command never asks for
        # it), with the listing it was made from: a refresh meanwhile makes it anew.
        self._wire: tuple[list[ToolEntry], list[dict[str, Any]]] = ([], [])
        self._sdk: list[mcp_types.Tool] | None = None
        self.tool_session.subscribe(self._relisted)
        self.refresh()

    @property
    def context_window(self) -> int | None:
        """The window deferral is sized for (None: the model's own)."""
        return self._context_window

    @property
    def registry(self) -> ToolRegistry:
        return self.tool_session.registry

    @property
    def session(self) -> CallSession:
        return self.tool_session.calls

    @property
    def toolset(self) -> Toolset:
        return self.tool_session.toolset

    @property
    def tools(self) -> ToolList:
        return self.tool_session.tools

    # -- reads (never wait) ------------------------------------------------------------------
    def list_tools(self, access: AccessView | None = None) -> Sequence[mcp_types.Tool]:
        """The listing as SDK tools (as the principals of ``access`` see it, when given)."""
        if access is not None:
            listed = self._listed
            return access.memo(
                "sdk",
                listed,
                lambda: _FORMAT.sdk_tools([e for e in listed if access.allows_entry(e)]),
            )
        if self._sdk is None:
            self._sdk = _FORMAT.sdk_tools(self._listed)
        return self._sdk

    def list_tools_json(self, access: AccessView | None = None) -> list[dict[str, Any]]:
        """The listing as MCP ``Tool`` JSON, without the MCP SDK (as the principals of
        ``access`` see it, when given: filtered from the prepared list, once per change)."""
        listed = self._listed
        made = self._wire
        if made[0] is not listed:
            made = self._wire = (listed, _FORMAT.tools(listed))
        wire = made[1]
        if access is None:
            return wire
        return access.memo(
            "wire",
            wire,
            lambda: [w for e, w in zip(listed, wire, strict=True) if access.allows_entry(e)],
        )

    def visible(self, access: AccessView | None) -> ToolList:
        """The current listing as the principals of ``access`` see it (None: all of it)."""
        return self.tools if access is None else self.tools.narrowed(access)

    def instructions(self, access: AccessView | None = None) -> str | None:
        """The deferred-tools section, rendered with the servers' state of this moment; with
        nothing deferred, a note on failing servers (so a model can tell "configured but
        failing" from "absent"), or None. With ``access``, only the tools and servers its
        principals may use are named."""
        statuses = dict(self._statuses()) if self._statuses else {}
        if access is not None:
            statuses = {
                ns: s
                for ns, s in statuses.items()
                if ns.startswith("mcp:") and access.allows_server(ns.removeprefix("mcp:"))
            }
        exposition = self.tools.exposition
        if exposition is not None and exposition.deferred:
            from pegboard.deferral.prompt import render_deferred_section  # lazy: a read defers none

            deferred = exposition.deferred
            if access is not None:
                deferred = tuple(e for e in deferred if access.allows_entry(e))
            section = render_deferred_section(list(exposition.tools), deferred, statuses=statuses)
            return section or None
        failed = sorted((s for s in statuses.values() if s.state == "failed"), key=_label)
        if not failed:
            return None
        lines = [  # escaped: a label or detail must not close the wrapper
            f"- {escape_markup(s.label)}: failed ({escape_markup(s.detail or 'no detail')})"
            for s in failed
        ]
        head = "These MCP servers are configured but failing; their tools are unavailable:"
        return "\n".join(["<mcp-servers>", head, *lines, "</mcp-servers>"])

    @property
    def exposition(self) -> Exposition | None:
        return self.tools.exposition

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener()`` whenever the listing changes; returns the unsubscribe."""

        def deliver(event: ToolListChanged) -> None:
            if event.source is self:
                listener()

        return self.events.subscribe(ToolListChanged, deliver)

    # -- recompute ---------------------------------------------------------------------------
    def refresh(self) -> bool:
        """Recompute the exposed tools; True (and listeners called) if the list changed."""
        return self.tool_session.refresh()

    def _relisted(self) -> None:  # the session's listener: the caches, then the bus
        self._listed = sorted(self.tools.shown, key=_name)
        self._sdk = None
        self.events.publish(ToolListChanged(self))

    # -- calls -------------------------------------------------------------------------------
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        call_id: str,
        approval: ApprovalHandler | None,
        session_id: str | None = None,
        client: str | None = None,
        principal: Principal | None = None,
        grant_ttl: float | None = None,
        access: AccessView | None = None,
    ) -> ToolOutput:
        """Run one tool of the listing (deferred ones included); failures become error outputs.

        ``session_id`` scopes "for this session" grants and the audit session (default: the
        surface's); ``principal`` is who calls (default: the session's); ``grant_ttl`` makes
        this call's "for this session" grants lapse after so many seconds (a sessionless
        client's "allow for a while"); ``access`` what that principal may use (a tool outside
        it is unknown, whatever route names it). :class:`ApprovalRequired` of the called tool itself
        propagates (no handler could ask), so the transport can say why the user was not
        asked; so does :class:`ApprovalPending` (asked in an input-required round).
        """
        listing = self.visible(access)
        try:
            return await self.tool_session.call(
                name,
                arguments,
                call_id,
                via=VIA,
                tools=listing,
                access=access,
                session_id=session_id,
                client=client,
                approval=approval,
                principal=principal,
                grant_ttl=grant_ttl,
                raising=(ApprovalRequired,),
            )
        except ApprovalRequired as exc:
            # a direct call nobody could approve; or any call whose approval is asked in an
            # input-required round (tool_invoke's target too)
            if exc.tool_name == name or isinstance(exc, ApprovalPending):
                raise
            return error_output(exc, listing.lookup)

    def gate_reason(self, name: str) -> GateReason:
        """Why ``name`` asks for approval (see :data:`~pegboard.core.scope.GateReason`).

        A force-prompt tool (``defer="never"``: the server's or the profile's
        ``force_prompt_tools``) is gated by that list whatever its annotations.
        """
        entry = self.registry.snapshot().get(name)
        if entry is None or entry.defer == "never":
            return "force_prompt"
        assistant = self.tool_session.scope().assistant
        policy = assistant.destructive_tools if assistant is not None else "ask"
        if policy == "ask" and is_destructive(entry.tool.annotations):
            return "destructive"
        return "force_prompt"


def _label(status: NamespaceStatus) -> str:
    return status.label


def _name(entry: ToolEntry) -> str:
    return entry.name

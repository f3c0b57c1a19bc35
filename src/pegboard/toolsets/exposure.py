"""The registry's tools for one profile, as ``pegboard serve`` exposes them.

:class:`RegistrySurface` is the :class:`~pegboard.gateway.surface.ToolSurface` of ``pegboard
serve`` and what the CLI calls through: it lists through the same composed toolset as the
agent dispatcher (:mod:`pegboard.toolsets`), recomputing the listing only when told the
registry or the scope changed (:meth:`refresh`), so ``tools/list`` is a read of a prepared
list; it tells its listeners only when that list really changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pegboard.calls.approval import ApprovalGrants, ApprovalHandler, ApprovalPending
from pegboard.calls.execute import error_output
from pegboard.calls.session import Call, CallSession
from pegboard.core.definition import canonical_json
from pegboard.core.entry import ToolEntry
from pegboard.core.events import EventBus, ToolListChanged
from pegboard.core.output import ToolOutput
from pegboard.core.redact import escape_markup
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import GateReason, ToolApplyScope
from pegboard.core.status import NamespaceStatus
from pegboard.core.tool import ToolContext, is_destructive
from pegboard.deferral.apply import Exposition
from pegboard.deferral.prompt import render_deferred_section
from pegboard.deferral.tool_exec import ExecSettings
from pegboard.errors import ApprovalRequired, PegboardError
from pegboard.formats.mcp import McpFormat
from pegboard.search.interface import SearchIndex
from pegboard.toolsets import (
    DeferralSettings,
    RegistryToolset,
    StatusSource,
    ToolList,
    Toolset,
    compose,
)

if TYPE_CHECKING:
    import mcp_types


ChangeListener = Callable[[], None]

VIA = "gateway"
_FORMAT = McpFormat()


class RegistrySurface:
    """Expose ``registry.select_active(scope())``, deferring large pools behind meta-tools."""

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
        self.registry = registry
        self.events = events if events is not None else EventBus()
        self.tool_exec = tool_exec
        self._scope = scope
        self.context_window = context_window
        self.defer = defer
        self._statuses = statuses
        self._index = index
        self.session = session or CallSession()
        self._sticky = False
        self.toolset: Toolset = compose(RegistryToolset(registry))
        self.tools = ToolList((), registry.snapshot())
        self._listed: list[ToolEntry] = []
        self._wire: list[dict[str, Any]] = []
        self._sdk: list[mcp_types.Tool] | None = None
        self._signature = ""
        self.refresh()

    # -- reads (never wait) ------------------------------------------------------------------
    def list_tools(self) -> Sequence[mcp_types.Tool]:
        if self._sdk is None:
            self._sdk = _FORMAT.sdk_tools(self._listed)
        return self._sdk

    def list_tools_json(self) -> list[dict[str, Any]]:
        """The listing as MCP ``Tool`` JSON, without the MCP SDK."""
        return self._wire

    def instructions(self) -> str | None:
        """The deferred-tools section, rendered with the servers' state of this moment; with
        nothing deferred, a note on failing servers (so a model can tell "configured but
        failing" from "absent"), or None."""
        statuses = dict(self._statuses()) if self._statuses else {}
        exposition = self.tools.exposition
        if exposition is not None and exposition.deferred:
            section = render_deferred_section(
                list(exposition.tools), exposition.deferred, statuses=statuses
            )
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
        deferral = None
        if self.defer:
            # Sticky: once deferred, a pool hovering around the threshold stays deferred, so
            # clients do not see the whole list flip in and out as servers warm.
            deferral = DeferralSettings(
                self.registry,
                context_window=self.context_window,
                session=self.session,
                index=self._index,
                statuses=self._statuses,
                sticky=self._sticky,
                tool_exec=self.tool_exec,
            )
        self.toolset = compose(RegistryToolset(self.registry), deferral)
        self.tools = self.toolset.list_tools(self._scope())
        self._sticky = self.tools.auto_deferred
        self._listed = sorted(self.tools.shown, key=_name)
        self._wire = _FORMAT.tools(self._listed)
        self._sdk = None
        signature = canonical_json(self._wire)
        if signature == self._signature:
            return False
        self._signature = signature
        self.events.publish(ToolListChanged(self))
        return True

    # -- calls -------------------------------------------------------------------------------
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        call_id: str,
        approval: ApprovalHandler | None,
        grants: ApprovalGrants | None = None,
        session_id: str | None = None,
    ) -> ToolOutput:
        """Run one tool of the listing (deferred ones included); failures become error outputs.

        :class:`ApprovalRequired` of the called tool itself propagates (no handler could ask),
        so the transport can say why the user was not asked.
        """
        session = CallSession(
            approval_handler=approval,
            grants=grants if grants is not None else self.session.grants,
            audit=self.session.audit,
            session_id=session_id or self.session.session_id,
        )
        tools = self.tools
        ctx = ToolContext(call_id=call_id, session_id=session.session_id, scope=self._scope())
        call = Call(name, dict(arguments), ctx, VIA, session)
        try:
            return await self.toolset.call_tool(call, tools)
        except ApprovalRequired as exc:
            # a direct call nobody could approve; or any call whose approval is asked in an
            # input-required round (tool_invoke's target too)
            if exc.tool_name == name or isinstance(exc, ApprovalPending):
                raise
            return error_output(exc, tools.lookup)
        except PegboardError as exc:  # tool errors, and a server that died mid-call
            return error_output(exc, tools.lookup)

    def gate_reason(self, name: str) -> GateReason:
        """Why ``name`` asks for approval (see :data:`~pegboard.core.scope.GateReason`).

        A force-prompt tool (``defer="never"``: the server's or the profile's
        ``force_prompt_tools``) is gated by that list whatever its annotations.
        """
        entry = self.registry.snapshot().get(name)
        if entry is None or entry.defer == "never":
            return "force_prompt"
        assistant = self._scope().assistant
        policy = assistant.destructive_tools if assistant is not None else "ask"
        if policy == "ask" and is_destructive(entry.tool.annotations):
            return "destructive"
        return "force_prompt"


def _label(status: NamespaceStatus) -> str:
    return status.label


def _name(entry: ToolEntry) -> str:
    return entry.name

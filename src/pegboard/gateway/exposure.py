"""The registry's tools for one profile, as ``pegboard serve`` exposes them.

:class:`RegistrySurface` is the :class:`~pegboard.gateway.surface.ToolSurface` of ``pegboard
serve``: it lists through the same composed toolset as the agent dispatcher and ``pegboard
tools`` (:mod:`pegboard.toolsets`), recomputing the listing only when told the registry or the
scope changed (:meth:`refresh`), so ``tools/list`` is a read of a prepared list; it tells its
listeners only when that list really changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pegboard.agent.formats.mcp import McpFormat
from pegboard.calls.approval import ApprovalHandler
from pegboard.calls.execute import error_output
from pegboard.calls.session import Call, CallSession
from pegboard.core.definition import canonical_json
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.redact import escape_markup
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ToolApplyScope
from pegboard.core.tool import ToolContext
from pegboard.deferral.apply import Exposition
from pegboard.deferral.prompt import NamespaceStatus, render_deferred_section
from pegboard.deferral.tool_exec import ExecSettings
from pegboard.errors import ApprovalRequired, PegboardError
from pegboard.gateway.surface import ChangeListener
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

logger = logging.getLogger("pegboard.gateway")

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
    ) -> None:
        self.registry = registry
        self.tool_exec = tool_exec
        self._scope = scope
        self.context_window = context_window
        self.defer = defer
        self._statuses = statuses
        self._index = index
        self.session = session or CallSession()
        self._listeners: list[ChangeListener] = []
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
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

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
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:
                logger.exception("tool-list listener failed")
        return True

    # -- calls -------------------------------------------------------------------------------
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        call_id: str,
        approval: ApprovalHandler | None,
        session_id: str | None = None,
    ) -> ToolOutput:
        """Run one tool of the listing (deferred ones included); failures become error outputs.

        :class:`ApprovalRequired` of the called tool itself propagates (no handler could ask),
        so the transport can say why the user was not asked.
        """
        session = CallSession(
            approval_handler=approval,
            grants=self.session.grants,
            audit=self.session.audit,
            session_id=session_id or self.session.session_id,
            pending=self.session.pending,
            principal=self.session.principal,
        )
        tools = self.tools
        ctx = ToolContext(call_id=call_id, session_id=session.session_id, scope=self._scope())
        call = Call(name, dict(arguments), ctx, VIA, session)
        try:
            return await self.toolset.call_tool(call, tools)
        except ApprovalRequired as exc:
            if exc.tool_name == name:  # a direct call nobody could approve
                raise
            return error_output(exc, tools.lookup)
        except PegboardError as exc:  # tool errors, and a server that died mid-call
            return error_output(exc, tools.lookup)


def _label(status: NamespaceStatus) -> str:
    return status.label


def _name(entry: ToolEntry) -> str:
    return entry.name

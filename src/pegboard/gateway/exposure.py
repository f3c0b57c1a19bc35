"""The registry's active tools for one profile, deferred by the exposition rules.

:class:`RegistrySurface` is the :class:`~pegboard.gateway.surface.ToolSurface` of ``pegboard
serve``: it recomputes the exposed tool list only when told the registry or the scope changed
(:meth:`refresh`), so ``tools/list`` is a read of a prepared list, and it tells its listeners
only when that list really changed.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import mcp_types

from pegboard.agent.formats.mcp import to_mcp_tools
from pegboard.calls.approval import ApprovalGrants, ApprovalHandler
from pegboard.calls.execute import CallPolicy, error_output, execute_entry
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ToolApplyScope
from pegboard.core.tool import Tool, ToolContext, canonical_json
from pegboard.deferral.apply import Exposition, apply_defer_exposition
from pegboard.deferral.prompt import NamespaceStatus, render_deferred_section
from pegboard.errors import ApprovalRequired, PegboardError, ToolNotFound
from pegboard.gateway.surface import ChangeListener
from pegboard.search.interface import SearchIndex

logger = logging.getLogger("pegboard.gateway")

StatusSource = Callable[[], Mapping[str, NamespaceStatus]]


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
        audit: CallPolicy | None = None,
        index: SearchIndex | None = None,
    ) -> None:
        self.registry = registry
        self._index = index
        self._scope = scope
        self.context_window = context_window
        self.defer = defer
        self._statuses = statuses
        self._policy = audit or CallPolicy()
        self._listeners: list[ChangeListener] = []
        self._exposition: Exposition | None = None
        self._entries: dict[str, ToolEntry] = {}
        self._tools: list[mcp_types.Tool] = []
        self._signature = ""
        self.refresh()

    # -- reads (never wait) ------------------------------------------------------------------
    def list_tools(self) -> Sequence[mcp_types.Tool]:
        return self._tools

    def instructions(self) -> str | None:
        """The deferred-tools section, rendered with the servers' state of this moment; with
        nothing deferred, a note on failing servers (so a model can tell "configured but
        failing" from "absent"), or None."""
        statuses = dict(self._statuses()) if self._statuses else {}
        exposition = self._exposition
        if exposition is not None and exposition.deferred:
            section = render_deferred_section(
                list(exposition.tools), exposition.deferred, statuses=statuses
            )
            return section or None
        failed = sorted((s for s in statuses.values() if s.state == "failed"), key=_label)
        if not failed:
            return None
        lines = [f"- {s.label}: failed ({s.detail or 'no detail'})" for s in failed]
        head = "These MCP servers are configured but failing; their tools are unavailable:"
        return "\n".join(["<mcp-servers>", head, *lines, "</mcp-servers>"])

    @property
    def exposition(self) -> Exposition | None:
        return self._exposition

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    # -- recompute ---------------------------------------------------------------------------
    def refresh(self) -> bool:
        """Recompute the exposed tools; True (and listeners called) if the list changed."""
        active = self.registry.select_active(self._scope())
        tools: dict[str, Tool] = {e.name: e.tool for e in active}
        statuses = dict(self._statuses()) if self._statuses else None
        if self.defer:
            # Sticky: once deferred, a pool hovering around the threshold stays deferred, so
            # clients do not see the whole list flip in and out as servers warm.
            was_deferred = bool(self._exposition and self._exposition.deferred)
            exposition = apply_defer_exposition(
                tools,
                self.registry,
                self.context_window,
                statuses=statuses,
                policy=self._policy,
                sticky=was_deferred,
                index=self._index,
            )
        else:
            exposition = Exposition(tools, (), frozenset(tools), "", None)
        entries = {e.name: e for e in active if e.name in exposition.tools}
        for name, tool in exposition.tools.items():
            entries.setdefault(name, ToolEntry(name=name, namespace="meta", tool=tool))
        listed = to_mcp_tools(entries[name] for name in sorted(exposition.tools))
        signature = canonical_json([t.model_dump(mode="json", exclude_none=True) for t in listed])
        self._exposition, self._entries, self._tools = exposition, entries, listed
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
        grants: ApprovalGrants | None = None,
    ) -> ToolOutput:
        """Run one exposed tool; failures become error outputs.

        :class:`ApprovalRequired` propagates (no handler could ask), so the transport can say
        why the user was not asked.
        """
        if name not in self._entries:  # a pre-hyphen name from a client's cached list
            name = self.registry.snapshot().canonical(name)
        entry = self._entries.get(name)
        policy = CallPolicy(
            approval_handler=approval,
            grants=grants if grants is not None else self._policy.grants,
            audit=self._policy.audit,
        )
        try:
            if entry is None:
                raise ToolNotFound(name, _close(name, self._entries))
            ctx = ToolContext(call_id=call_id, scope=self._scope())
            return await execute_entry(entry, dict(arguments), ctx, via="gateway", policy=policy)
        except ApprovalRequired as exc:
            if exc.tool_name == name:  # a direct call nobody could approve
                raise
            return error_output(exc, self.registry.get_by_name)
        except PegboardError as exc:  # tool errors, and a server that died mid-call
            return error_output(exc, self.registry.get_by_name)


def _label(status: NamespaceStatus) -> str:
    return status.label


def _close(name: str, entries: Mapping[str, ToolEntry]) -> list[str]:
    return difflib.get_close_matches(name, sorted(entries), n=3, cutoff=0.6)

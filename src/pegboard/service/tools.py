"""Tools of one profile: list, search, inspect and call, as the gateway lists and calls them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pegboard.calls.approval import ApprovalHandler, may_need_approval
from pegboard.calls.execute import error_output
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.errors import ToolNotAllowed, ToolNotFound

if TYPE_CHECKING:
    from pegboard.mcp.sync import McpCollision
    from pegboard.search.interface import SearchHit
    from pegboard.service.app import Service

VIA = "cli"


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """How a call ended: ``found`` False when the name did not resolve (nothing ran)."""

    output: ToolOutput
    found: bool = True

    @property
    def failed(self) -> bool:
        return self.output.is_error


@dataclass(frozen=True, slots=True)
class ToolRow:
    """One exposed tool with its markers, as the admin page lists it."""

    entry: ToolEntry
    deferred: bool
    gated: bool
    flags: tuple[str, ...]


class ToolService:
    """The profile's tools, listed through the toolset the gateway and the dispatcher use."""

    def __init__(self, service: Service) -> None:
        self._service = service

    def _listed(self) -> list[ToolEntry]:
        return list(self._service.runtime.surface.tools.entries())

    def entries(self, query: str | None = None, namespace: str | None = None) -> list[ToolEntry]:
        """The exposed tools, filtered by a case-insensitive substring and a namespace."""
        active = {e.name for e in self._listed()}
        registry = self._service.runtime.registry
        return [e for e in registry.get_all(query=query, namespace=namespace) if e.name in active]

    def search(self, query: str, limit: int = 8) -> list[tuple[ToolEntry, SearchHit]]:
        """The exposed tools ranked as ``tool_search`` ranks them for a model."""
        runtime = self._service.runtime
        allowed = frozenset(e.name for e in self._listed())
        hits = runtime.index.search([query], limit=limit, allowed=allowed)
        return [(e, h) for h in hits if (e := runtime.registry.get_by_name(h.name)) is not None]

    def get(self, name: str) -> ToolEntry:
        """The exposed tool ``name``; ToolNotFound / ToolNotAllowed with suggestions."""
        return self._service.runtime.surface.tools.resolve(name)

    def flags(self, entry: ToolEntry) -> list[str]:
        """The tool's poisoning flags (heuristic; empty for a tool that is not MCP's)."""
        if entry.source is None:
            return []
        found = self._service.runtime.catalog.flags(entry.source.server_id)
        return list(found.get(entry.source.tool_name, []))

    def rows(self, query: str = "", limit: int = 200) -> list[ToolRow]:
        """The exposed tools (ranked as ``tool_search`` ranks them when ``query`` is given),
        each with its markers: deferred behind the meta-tools, gated, flagged."""
        if query.strip():
            entries = [entry for entry, _ in self.search(query, limit=limit)]
        else:
            entries = sorted(self._listed(), key=lambda e: e.name)[:limit]
        exposition = self._service.runtime.surface.exposition
        deferred = {e.name for e in exposition.deferred} if exposition is not None else set()
        return [
            ToolRow(e, e.name in deferred, may_need_approval(e.tool), tuple(self.flags(e)))
            for e in entries
        ]

    def cached_mcp_tools(self) -> int:
        """How many MCP tools the registry holds (from the catalog's cache)."""
        return sum(1 for e in self._service.runtime.registry.get_all() if e.source is not None)

    def excluded(self) -> list[McpCollision]:
        return self._service.runtime.excluded()

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        handler: ApprovalHandler,
        *,
        unparsable: str | None = None,
    ) -> CallOutcome:
        """One call through the runtime's tool session (resolve, approval, audit); servers
        start only when the name resolves. ``unparsable`` is why the arguments could not be
        read: the call is refused on the call path, so the audit log has it too."""
        runtime = self._service.runtime
        session = runtime.surface.tool_session

        async def attempt() -> CallOutcome:
            try:
                output = await session.call(
                    name,
                    arguments,
                    VIA,
                    via=VIA,
                    approval=handler,
                    unparsable=unparsable,
                    raising=(ToolNotFound, ToolNotAllowed),
                )
            except (ToolNotFound, ToolNotAllowed) as exc:
                waiting = self.waiting_for_trust(name)
                if waiting is not None:
                    return CallOutcome(ToolOutput.error(waiting), found=False)
                return CallOutcome(error_output(exc), found=False)
            return CallOutcome(output)

        if unparsable is not None or session.tools.get(name) is None:  # no server started
            return await attempt()
        async with runtime.running():
            return await attempt()

    def waiting_for_trust(self, name: str) -> str | None:
        """The message for a tool of a server that waits for trust (its launch definition
        changed, so none of its tools is listed): say so instead of "not found"."""
        for status in self._service.runtime.catalog.statuses():
            if status.launch_changed and name.startswith(f"mcp__{status.server_id}__"):
                sid = status.server_id
                return (
                    f"{name}: MCP server {sid} waits for trust (its launch definition changed), "
                    f"so its tools are not listed; review `pegboard servers list`, then run "
                    f"`pegboard tools trust --server {sid}`"
                )
        return None

"""Which MCP tools an assistant gets, and keeping the registry in step with the catalog.

:func:`resolve_assistant_mcp_tool_ids` picks wire names by the assistant's MCP mode (waiting a
bounded time for cold servers); :func:`sync_mcp_tools_to_registry` registers one entry per
selected tool from the cache alone. Eviction is conservative: a tool leaves the registry only
when its server is inactive or a successful read of its server no longer lists it, so a
transient failure never hides tools, and a selection never evicts what it did not select
(two requests syncing overlapping selections at once both keep their tools).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio

from pegboard.core.definition import ToolDefinition
from pegboard.core.entry import ToolEntry, ToolSource
from pegboard.core.names import is_mcp_namespace, mcp_namespace, mcp_tool_name
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import AssistantSettings, ToolApplyScope
from pegboard.core.tool import Tool, ToolContext, is_destructive
from pegboard.errors import McpToolError
from pegboard.mcp.catalog import McpCatalog
from pegboard.mcp.config import McpServerConfig
from pegboard.mcp.poison import strip_invisible

logger = logging.getLogger("pegboard.mcp.sync")


@dataclass(frozen=True, slots=True)
class McpCollision:
    """Different tools that map to one wire name; none of them is registered."""

    name: str
    sources: tuple[ToolSource, ...]

    def describe(self) -> str:
        """One line for people: which tools were excluded, why, and the fix."""
        claims = ", ".join(f"{s.server_id}/{s.tool_name}" for s in self.sources)
        fix = "(rename one tool, or disable it in its server's disabled_tools)"
        if len(self.sources) == 1:  # the other claimant is a built-in, plugin or user tool
            return f"{self.name} of {claims} is taken by a registered non-MCP tool; {fix}"
        return f"{self.name} is claimed by {claims}; none of them is registered {fix}"

    def as_json(self) -> dict[str, object]:
        return {
            "wire_name": self.name,
            "claimed_by": [f"{s.server_id}/{s.tool_name}" for s in self.sources],
            "reason": "wire name collision",
        }


@dataclass(slots=True)
class SyncReport:
    registered: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    collisions: list[McpCollision] = field(default_factory=list)


async def resolve_assistant_mcp_tool_ids(
    assistant_settings: AssistantSettings, catalog: McpCatalog, *, wait_timeout: float = 10.0
) -> list[str]:
    """Wire names of the MCP tools this assistant may use, sorted.

    ``disabled`` -> none; ``manual`` -> tools of the linked servers (none linked -> none, and
    the catalog is not touched); ``auto`` -> tools of every active server. Cold servers are
    warmed concurrently, waiting at most ``wait_timeout``. A failing server (state
    ``failed``) and a server still connecting contribute their last-known-good (cached)
    tools, as ``pegboard serve`` does: the server's status tells the model it is failing,
    and a call to it gets a clear error, whereas dropping its tools would make a transient
    failure look like a tool that never existed (the reference design keeps cached tools too).
    """
    mode = assistant_settings.mcp_mode
    if mode == "disabled":
        return []
    if mode == "manual":
        server_ids = [s for s in assistant_settings.mcp_server_ids if catalog.is_active(s)]
    else:
        server_ids = [c.id for c in catalog.servers() if catalog.is_active(c.id)]
    if not server_ids:
        return []
    async with anyio.create_task_group() as tg:
        for server_id in server_ids:
            if catalog.read_tools(server_id) is None:
                tg.start_soon(catalog.wait_warm, server_id, wait_timeout)
    ids: set[str] = set()
    for server_id in server_ids:
        try:
            tools = catalog.list_tools(server_id)
        except Exception as exc:
            logger.warning("MCP server %s contributes no tools: %s", server_id, exc)
            continue
        for tool in tools:
            wire = mcp_tool_name(server_id, catalog.server(server_id).name, tool.name)
            if assistant_settings.allows_mcp_tool(wire, server_id, tool.name):
                ids.add(wire)
    return sorted(ids)


def sync_mcp_tools_to_registry(
    registry: ToolRegistry,
    catalog: McpCatalog,
    selected_tool_ids: Iterable[str] | None = None,
    *,
    assistant: AssistantSettings | None = None,
) -> SyncReport:
    """Register the catalog's (selected) tools in ``registry``; see the module docstring."""
    report = SyncReport()
    selection = None if selected_tool_ids is None else frozenset(selected_tool_ids)
    if selection is not None and not selection:
        return report
    snapshot = registry.snapshot()
    candidates: dict[str, list[ToolEntry]] = {}
    listed: dict[str, set[str]] = {}  # server id -> wire names its successful read holds
    for config in catalog.servers():
        if not catalog.is_active(config.id):
            continue
        try:
            tools = catalog.read_tools(config.id)
        except Exception as exc:
            logger.warning(
                "MCP server %s: catalog read failed, keeping its tools: %s", config.id, exc
            )
            continue
        if tools is None:
            continue
        names = listed.setdefault(config.id, set())
        for tool in tools:
            wire = mcp_tool_name(config.id, config.name, tool.name)
            names.add(wire)
            if selection is None or wire in selection:
                candidates.setdefault(wire, []).append(
                    _entry(wire, config, tool, catalog, assistant)
                )

    to_register: list[ToolEntry] = []
    stale: list[str] = []
    for wire, entries in sorted(candidates.items()):
        sources = {e.source for e in entries}
        existing = snapshot.get(wire)
        if existing is not None and existing.source not in sources:
            sources.add(existing.source)
        if len(sources) > 1:
            found = tuple(
                sorted((s for s in sources if s), key=lambda s: (s.server_id, s.tool_name))
            )
            collision = McpCollision(wire, found)
            report.collisions.append(collision)
            logger.warning("MCP wire name %s", collision.describe())
            if existing is not None and is_mcp_namespace(existing.namespace):
                stale.append(wire)
            continue
        to_register.append(entries[0])
    registry.register_many(to_register)
    report.registered = [e.name for e in to_register]

    for entry in snapshot.entries():
        if not is_mcp_namespace(entry.namespace) or entry.source is None:
            continue
        server_id = entry.source.server_id
        if not catalog.is_active(server_id) or (
            server_id in listed
            and entry.name not in listed[server_id]
            and (selection is None or entry.name in selection)
        ):
            stale.append(entry.name)
    if stale:
        registry.deregister_many(stale)
        report.evicted = sorted(set(stale))
    return report


def _entry(
    wire: str,
    config: McpServerConfig,
    tool: ToolDefinition,
    catalog: McpCatalog,
    assistant: AssistantSettings | None,
) -> ToolEntry:
    server_id, tool_name = config.id, tool.name
    force_prompt = config.is_force_prompt(tool_name) or (
        assistant is not None and assistant.is_force_prompt(wire, server_id, tool_name)
    )

    async def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
        output = await catalog.call_tool(server_id, tool_name, args, call_id=ctx.call_id or None)
        if output.is_error:
            message = output.as_text() or f"MCP tool {tool_name} on {server_id} failed"
            raise McpToolError(message, tool_name=wire, output=output)
        return output

    def applies(scope: ToolApplyScope) -> bool:
        if scope.mcp_tool_ids is None:  # not resolved for this request: the mode decides
            return scope.assistant.allows_mcp_tool(wire, server_id, tool_name)
        return wire in scope.mcp_tool_ids

    annotations = dict(tool.annotations) if tool.annotations is not None else None
    policy = assistant.destructive_tools if assistant is not None else "ask"
    gated = force_prompt or (policy == "ask" and is_destructive(annotations))
    # The model never sees invisible characters (tag, zero-width, bidi) a server hid in prose;
    # the catalog knows which definitions hold any (nearly none): the others are taken as read.
    strip = strip_invisible if catalog.has_invisible(server_id, tool_name) else _as_read
    description = strip(tool.description)
    return ToolEntry(
        name=wire,
        namespace=mcp_namespace(server_id),
        namespace_label=mcp_namespace(config.display_name),
        description=description,
        defer="never" if force_prompt else "auto",
        tool=Tool(
            description=description,
            input_schema=strip(tool.input_schema),
            output_schema=strip(tool.output_schema),
            execute=execute,
            needs_approval=True if gated else None,
            annotations=annotations,
            title=strip(tool.title) if tool.title else None,
        ),
        applies=applies,
        source=ToolSource(server_id, tool_name),
    )


def _as_read(value: Any) -> Any:
    return value

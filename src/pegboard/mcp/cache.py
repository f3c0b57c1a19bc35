"""The catalog's cache: every configured server's tools, trust and content, read from memory.

Reads never connect and never wait: they answer from the in-memory entries, which start from
the store (last-known-good lists of a previous process) and are written through to it by the
supervisor (:mod:`pegboard.mcp.supervisor`) after every refresh. Shared data goes to the
:class:`~pegboard.mcp.store.CatalogStore`, what this process saw of each server (state, error,
backoff) to the :class:`~pegboard.mcp.store.ReplicaStateStore`. Changes are published on the
event bus (:class:`~pegboard.core.events.ToolsChanged`, ``ServerStatusChanged``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

import anyio.to_thread

from pegboard.core.definition import ToolDefinition
from pegboard.core.events import ContentChanged, EventBus, ServerStatusChanged, ToolsChanged
from pegboard.errors import CatalogError, McpError
from pegboard.mcp.config import McpServerConfig
from pegboard.mcp.server_state import ServerEntry
from pegboard.mcp.store import (
    CatalogStore,
    ReplicaStateStore,
    SharedTable,
    StoredContent,
    StoredServer,
    StoredState,
)

if TYPE_CHECKING:
    from pegboard.mcp.status import ServerStatus

logger = logging.getLogger("pegboard.mcp.catalog")

R = TypeVar("R", StoredServer, StoredState)


class CatalogCache:
    """Server entries by id, their reads, and the write-through to the stores."""

    def __init__(
        self,
        store: CatalogStore,
        state: ReplicaStateStore,
        events: EventBus,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.state = state
        self.events = events
        self.clock = clock
        self._entries: dict[str, ServerEntry] = {}
        self._content: dict[tuple[str, str], StoredContent] = {}
        self._stored = _read(store.load_all, "the MCP tool catalog")
        self._states = _read(state.load_states, "the MCP servers' last states")
        # Set by the supervisor: start one background warm of a never-listed server (False
        # when it cannot, outside ``running()``).
        self.on_cold: Callable[[str], bool] = lambda server_id: False

    def add(self, entry: ServerEntry) -> None:
        """Take a new server's entry, loading what the stores kept of it."""
        config = entry.config
        if config.id in self._entries:
            raise McpError(f"MCP server id {config.id!r} is configured twice; ids must be unique")
        entry.set_pins(self.read_pins(config.id))
        record, state = self._stored.pop(config.id, None), self._states.pop(config.id, None)
        if record is not None and record.fingerprint != config.fingerprint:
            logger.info(
                "MCP server %s changed its definition; its cached tools are dropped", config.id
            )
            record = None
        if state is not None and state.fingerprint != config.fingerprint:
            state = None
        entry.load(record, state)
        self._write_first_pins(entry)
        self._entries[config.id] = entry

    def _write_first_pins(self, entry: ServerEntry) -> None:
        """Pin what a cached list shows for the first time (trust on first sight)."""
        pins, entry.new_pins = entry.new_pins, {}
        if not pins:
            return
        try:
            self.store.set_pins(entry.config.id, pins)
        except CatalogError as exc:
            logger.warning("%s", exc)

    def read_pins(self, server_id: str) -> dict[str, str]:
        try:
            return self.store.pins(server_id)
        except Exception as exc:
            logger.warning("could not read the trust pins of MCP server %s (%s)", server_id, exc)
            return {}

    # -- reads --------------------------------------------------------------------------------
    def entries(self) -> list[ServerEntry]:
        return list(self._entries.values())

    def get(self, server_id: str) -> ServerEntry | None:
        return self._entries.get(server_id)

    def entry(self, server_id: str) -> ServerEntry:
        try:
            return self._entries[server_id]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none"
            raise McpError(f"unknown MCP server {server_id!r}; configured: {known}") from None

    def active(self, server_id: str) -> ServerEntry | None:
        """The entry of an enabled server, else None."""
        entry = self._entries.get(server_id)
        return entry if entry is not None and entry.enabled else None

    def list_tools(self, server_id: str, include_disabled: bool = False) -> list[ToolDefinition]:
        """Cached tools; never connects. A never-warmed server starts one background refresh."""
        entry = self.active(server_id)
        if entry is None:
            return []
        if entry.tools is None:
            if not entry.attempted and entry.flight is None:
                entry.attempted = True
                if not self.on_cold(server_id):
                    # Outside ``running()`` there is nowhere to warm in the background (its
                    # pre-warm will); the status says "cold", which the CLI shows with the fix.
                    logger.debug(
                        "MCP server %s has no cached tools yet and the catalog is not running",
                        server_id,
                    )
            return []
        return list(entry.tools if include_disabled else entry.visible)

    def read_tools(self, server_id: str) -> list[ToolDefinition] | None:
        """Like :meth:`list_tools`, but None when nothing is known yet (no eviction then)."""
        entry = self.active(server_id)
        if entry is None:
            return []
        tools = self.list_tools(server_id)
        return None if entry.tools is None else tools

    def statuses(self) -> list[ServerStatus]:
        return [e.status() for e in self._entries.values()]

    def has_invisible(self, server_id: str, tool_name: str) -> bool:
        """Whether the cached definition of ``tool_name`` holds a tag, zero-width or bidi
        character (decided when the list was read: one scan of the text its pin hashes)."""
        entry = self._entries.get(server_id)
        return entry is None or tool_name in entry.invisible

    def flags(self, server_id: str) -> Mapping[str, list[str]]:
        """Poisoning flags of the server's cached tools, by tool name (heuristic; a tool is
        checked when first asked for)."""
        entry = self._entries.get(server_id)
        return {} if entry is None else entry.flags

    def content(self, server_id: str, kind: str) -> StoredContent | None:
        """The last listing of ``kind`` (memory, else the store) made under the server's
        current launch definition; None when never listed."""
        found = self._content.get((server_id, kind))
        if found is None:
            found = self.store.content(server_id, kind)
        if found is None or found.fingerprint != self.entry(server_id).config.fingerprint:
            return None
        self._content[(server_id, kind)] = found
        return found

    # -- writes -------------------------------------------------------------------------------
    async def persist(self, entry: ServerEntry, *, tools: bool = True) -> None:
        """Write the entry's state (and, with ``tools``, its list and new pins) to the stores."""
        pins, entry.new_pins = entry.new_pins, {}
        try:
            if tools:
                await anyio.to_thread.run_sync(self.store.put, entry.record())
            await anyio.to_thread.run_sync(self.state.put_state, entry.state_record())
            if pins:
                await anyio.to_thread.run_sync(self.store.set_pins, entry.config.id, pins)
        except CatalogError as exc:
            logger.warning("%s", exc)

    async def set_content(self, record: StoredContent) -> None:
        self._content[(record.server_id, record.kind)] = record
        try:
            await anyio.to_thread.run_sync(self.store.set_content, record)
        except CatalogError as exc:
            logger.warning("%s", exc)

    async def forget(self, server_id: str) -> None:
        """Forget the server's cached list, error and backoff (in the stores too): the next
        read or warm lists it again. Publishes ToolsChanged when the list was non-empty."""
        entry = self.entry(server_id)
        had_tools = entry.forget()
        for key in [k for k in self._content if k[0] == server_id]:
            del self._content[key]
        try:
            await anyio.to_thread.run_sync(self.store.delete, server_id)
            await anyio.to_thread.run_sync(self.state.delete_state, server_id)
        except CatalogError as exc:
            logger.warning("%s", exc)
        if had_tools:
            self.tools_changed(server_id)

    async def follow(self, table: SharedTable, server_id: str) -> None:
        """Take what another process wrote to ``table`` for ``server_id`` (read from the
        store); publishes ToolsChanged when what this process lists changed, and
        ContentChanged (``stored``) for content, so clients list it again."""
        entry = self._entries.get(server_id)
        if entry is None:
            return
        if table == "content":  # the next listing reads the store
            for key in [k for k in self._content if k[0] == server_id]:
                del self._content[key]
            self.events.publish(ContentChanged(server_id, stored=True))
            return
        if table == "pins":
            pins = await anyio.to_thread.run_sync(self.store.pins, server_id)
            if entry.set_pins(pins):
                self.tools_changed(server_id)
            return
        record = await anyio.to_thread.run_sync(self.store.get, server_id)
        if record is not None and record.fingerprint != entry.config.fingerprint:
            return  # another launch definition: not this server's list
        if record is None or record.tools is None:
            if entry.raw is not None and entry.flight is None and entry.forget():
                self.tools_changed(server_id)
            return
        if entry.adopt(record):
            logger.info("MCP server %s: took the tool list another replica stored", server_id)
            self.tools_changed(server_id)

    def update_gates(self, server_id: str, config: McpServerConfig) -> None:
        """Take ``config``'s gates (disabled, force-prompt tools, approve_content) live,
        whatever else changed; publishes ToolsChanged so the registry re-syncs (the launch
        definition stays as started: a redefined server needs a restart)."""
        entry = self.entry(server_id)
        entry.config = entry.config.model_copy(
            update={
                "disabled_tools": config.disabled_tools,
                "force_prompt_tools": config.force_prompt_tools,
                "approve_content": config.approve_content,
            }
        )
        if entry.raw is not None:
            entry.set_pins(entry.pins)  # recomputes what is visible under the new gates
        self.tools_changed(server_id)

    def tools_changed(self, server_id: str) -> None:
        self.events.publish(ToolsChanged(server_id))

    def status_changed(self, server_id: str) -> None:
        self.events.publish(ServerStatusChanged(server_id))


def _read(load: Callable[[], dict[str, R]], what: str) -> dict[str, R]:
    try:
        return load()
    except Exception as exc:
        logger.warning("could not read %s (%s); starting empty", what, exc)
        return {}

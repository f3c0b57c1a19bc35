"""McpCatalog: cache-only reads, background warmers, persistent last-known-good tool lists.

Reads (:meth:`McpCatalog.list_tools`) never connect: they return the cached list in
microseconds whatever the server is doing. The catalog is three parts, each usable alone:

- :attr:`McpCatalog.cache` (:class:`~pegboard.mcp.cache.CatalogCache`): the entries, their
  reads, trust pins and content, written through to the stores;
- :attr:`McpCatalog.supervisor` (:class:`~pegboard.mcp.supervisor.ServerSupervisor`):
  connections, warmers, backoff, restarts, calls and resource/prompt listings;
- :attr:`McpCatalog.events` (:class:`~pegboard.core.events.EventBus`): ``ToolsChanged``,
  ``ServerStatusChanged`` and ``ContentChanged``, for whoever subscribes.

The methods below are the façade most callers need; each is one call into a part.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from pegboard.core.definition import ToolDefinition
from pegboard.core.events import EventBus
from pegboard.core.output import ToolOutput
from pegboard.mcp.cache import CatalogCache
from pegboard.mcp.config import McpServerConfig
from pegboard.mcp.feed import FeedFollower
from pegboard.mcp.store import (
    CatalogStore,
    ChangeListener,
    MemoryCatalogStore,
    ReplicaStateStore,
)
from pegboard.mcp.supervisor import ServerSupervisor, SupervisorSettings, launch_refused
from pegboard.mcp.transport import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_STDERR_LOG_BYTES

if TYPE_CHECKING:
    from mcp import ClientSession

    from pegboard.mcp.status import ServerStatus

__all__ = ["McpCatalog", "launch_refused"]


class McpCatalog:
    """Every configured server's tools, served from cache (see the module docstring)."""

    def __init__(
        self,
        servers: Iterable[McpServerConfig],
        store: CatalogStore | None = None,
        *,
        state: ReplicaStateStore | None = None,
        events: EventBus | None = None,
        prewarm_concurrency: int = 3,
        empty_backoff: float = 300.0,
        failure_backoff: float = 30.0,
        refresh_interval: float | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        stderr_log_bytes: int = DEFAULT_STDERR_LOG_BYTES,
        stderr_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``store`` holds the shared data, ``state`` this process's view of each server
        (default: ``store`` itself when it keeps both, as the SQLite and memory stores do)."""
        self.events = events if events is not None else EventBus()
        shared: CatalogStore = store if store is not None else MemoryCatalogStore()
        if state is None:
            state = shared if isinstance(shared, ReplicaStateStore) else MemoryCatalogStore()
        self.cache = CatalogCache(shared, state, self.events, clock=clock)
        self.settings = SupervisorSettings(
            prewarm_concurrency=prewarm_concurrency,
            empty_backoff=empty_backoff,
            failure_backoff=failure_backoff,
            refresh_interval=refresh_interval,
            max_message_bytes=max_message_bytes,
            stderr_log_bytes=stderr_log_bytes,
            stderr_dir=stderr_dir,
        )
        self.supervisor = ServerSupervisor(self.cache, self.settings)
        for config in servers:
            self.supervisor.add(config)

    @property
    def store(self) -> CatalogStore:
        return self.cache.store

    # -- lifecycle (supervisor) ---------------------------------------------------------------
    @asynccontextmanager
    async def running(self, *, prewarm: bool = True) -> AsyncIterator[McpCatalog]:
        """Run connections and warmers, and follow other processes' writes when the store
        notifies them (:mod:`pegboard.mcp.feed`); on exit close every session and reap
        every child."""
        async with self.supervisor.running(prewarm=prewarm):
            store = self.cache.store
            if not isinstance(store, ChangeListener):
                yield self
                return
            async with anyio.create_task_group() as tg:
                tg.start_soon(FeedFollower(self.cache, store).run)
                try:
                    yield self
                finally:
                    tg.cancel_scope.cancel()

    async def start(self) -> None:
        """Pre-warm every enabled server in the background (bounded concurrency); returns now."""
        self.supervisor.start()

    async def refresh_tools(self, server_id: str) -> list[ToolDefinition]:
        """List the server's tools live and cache them (single-flight). Failure re-raises."""
        return await self.supervisor.refresh_tools(server_id)

    async def warm(self, server_id: str) -> None:
        await self.supervisor.warm(server_id)

    async def wait_warm(self, server_id: str, wait_timeout: float) -> None:
        await self.supervisor.wait_warm(server_id, wait_timeout)

    async def call_tool(
        self,
        server_id: str,
        tool_name: str,
        arguments: dict[str, Any] | None = None,
        *,
        call_id: str | None = None,
        call_timeout: float | None = None,
    ) -> ToolOutput:
        return await self.supervisor.call_tool(
            server_id, tool_name, arguments, call_id=call_id, call_timeout=call_timeout
        )

    async def set_enabled(self, server_id: str, enabled: bool) -> None:
        await self.supervisor.set_enabled(server_id, enabled)

    async def restart(self, server_id: str) -> list[ToolDefinition]:
        return await self.supervisor.restart(server_id)

    async def session(self, server_id: str) -> ClientSession:
        return await self.supervisor.session(server_id)

    # -- reads and cache writes (cache) -------------------------------------------------------
    def list_tools(self, server_id: str, include_disabled: bool = False) -> list[ToolDefinition]:
        return self.cache.list_tools(server_id, include_disabled)

    def read_tools(self, server_id: str) -> list[ToolDefinition] | None:
        return self.cache.read_tools(server_id)

    def servers(self) -> list[McpServerConfig]:
        return [e.config for e in self.cache.entries()]

    def server(self, server_id: str) -> McpServerConfig:
        return self.cache.entry(server_id).config

    def is_active(self, server_id: str) -> bool:
        return self.cache.active(server_id) is not None

    def status(self, server_id: str) -> ServerStatus:
        return self.cache.entry(server_id).status()

    def statuses(self) -> list[ServerStatus]:
        return self.cache.statuses()

    def stderr_tail(self, server_id: str) -> str:
        return self.cache.entry(server_id).connection.stderr.text()

    def flags(self, server_id: str) -> Mapping[str, list[str]]:
        return self.cache.flags(server_id)

    def has_invisible(self, server_id: str, tool_name: str) -> bool:
        return self.cache.has_invisible(server_id, tool_name)

    def tool_hashes(self, server_id: str) -> dict[str, str]:
        return dict(self.cache.entry(server_id).tool_hashes)

    def update_gates(self, server_id: str, config: McpServerConfig) -> None:
        self.cache.update_gates(server_id, config)

    async def clear_tools(self, server_id: str) -> None:
        await self.cache.forget(server_id)

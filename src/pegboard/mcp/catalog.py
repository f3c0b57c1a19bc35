"""McpCatalog: cache-only reads, background warmers, persistent last-known-good tool lists.

Reads (:meth:`McpCatalog.list_tools`) never connect: they return the cached list in
microseconds whatever the server is doing. Refreshes are live and driven by warmers: pre-warm
at start, ``notifications/tools/list_changed``, explicit refresh, enabling, restarting, and
the supervisor restarting a crashed server with backoff. A refresh that fails keeps the
last-known-good list and records the error; every list is written to the store so the next
process starts with every server's tools before any server answers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.to_thread

from pegboard.core.definition import ToolDefinition
from pegboard.core.output import ToolOutput
from pegboard.errors import (
    CatalogError,
    McpError,
    ServerInactive,
    ServerUnavailable,
    ToolNotAllowed,
)
from pegboard.mcp.config import McpServerConfig
from pegboard.mcp.connection import McpConnection
from pegboard.mcp.results import call_result_to_output
from pegboard.mcp.server_state import ServerEntry
from pegboard.mcp.status import ServerStatus
from pegboard.mcp.store import CatalogStore, MemoryCatalogStore, StoredServer
from pegboard.mcp.transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_STDERR_LOG_BYTES,
    StderrLog,
    stderr_path,
)

if TYPE_CHECKING:
    from mcp import ClientSession

logger = logging.getLogger("pegboard.mcp.catalog")

ToolsChangedCallback = Callable[[str], None]
LAUNCH_REFUSED = (
    "launch definition changed since it was trusted; "
    "not started until `pegboard tools trust --server`"
)


class McpCatalog:
    """Every configured server's tools, served from cache (see the module docstring)."""

    def __init__(
        self,
        servers: Iterable[McpServerConfig],
        store: CatalogStore | None = None,
        *,
        prewarm_concurrency: int = 3,
        empty_backoff: float = 300.0,
        failure_backoff: float = 30.0,
        refresh_interval: float | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        stderr_log_bytes: int = DEFAULT_STDERR_LOG_BYTES,
        stderr_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store: CatalogStore = store if store is not None else MemoryCatalogStore()
        self.prewarm_concurrency = prewarm_concurrency
        self.empty_backoff = empty_backoff
        self.failure_backoff = failure_backoff
        self.refresh_interval = refresh_interval
        self._clock = clock  # unix time; backoffs, fetched_at and status times use it
        self._tg: anyio.abc.TaskGroup | None = None
        self._stopping = False
        self._listeners: list[ToolsChangedCallback] = []
        self._status_listeners: list[ToolsChangedCallback] = []
        self._content_listeners: list[Callable[[], None]] = []
        self._entries: dict[str, ServerEntry] = {}
        stored = self._load_store()
        for config in servers:
            if config.id in self._entries:
                raise McpError(
                    f"MCP server id {config.id!r} is configured twice; ids must be unique"
                )
            connection = McpConnection(
                config,
                self._task_group,
                on_tools_list_changed=partial(self._on_list_changed, config.id),
                on_content_changed=self._on_content_changed,
                on_lost=partial(self._on_lost, config.id),
                on_connected=partial(self._on_connected, config.id),
                max_message_bytes=max_message_bytes,
                stderr_log=StderrLog(stderr_log_bytes, stderr_path(stderr_dir, config.id)),
            )
            entry = ServerEntry(config, connection, on_state=self._notify_status, clock=clock)
            connection.first_start = partial(_never_listed, entry)
            entry.set_pins(self._read_pins(config.id))
            record = stored.get(config.id)
            if record is not None and record.fingerprint == config.fingerprint:
                entry.load(record)
                self._write_first_pins(entry)
            elif record is not None:
                logger.info(
                    "MCP server %s changed its definition; its cached tools are dropped", config.id
                )
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

    def _read_pins(self, server_id: str) -> dict[str, str]:
        try:
            return self.store.pins(server_id)
        except Exception as exc:
            logger.warning("could not read the trust pins of MCP server %s (%s)", server_id, exc)
            return {}

    def _load_store(self) -> dict[str, StoredServer]:
        try:
            return self.store.load_all()
        except Exception as exc:
            logger.warning("could not read the MCP tool catalog (%s); starting empty", exc)
            return {}

    # -- lifecycle ----------------------------------------------------------------------------
    @asynccontextmanager
    async def running(self, *, prewarm: bool = True) -> AsyncIterator[McpCatalog]:
        """Run connections and warmers; on exit close every session and reap every child."""
        async with anyio.create_task_group() as tg:
            self._tg, self._stopping = tg, False
            try:
                if prewarm:
                    await self.start()
                if self.refresh_interval:
                    tg.start_soon(self._refresh_periodically, self.refresh_interval)
                yield self
            finally:
                self._stopping = True
                with anyio.CancelScope(shield=True):
                    async with anyio.create_task_group() as closing:
                        for entry in self._entries.values():
                            closing.start_soon(entry.connection.close)
                tg.cancel_scope.cancel()
                self._tg = None

    def _task_group(self) -> anyio.abc.TaskGroup:
        if self._tg is None:
            raise McpError(
                "the MCP catalog is not running; use `async with catalog.running(): ...`"
            )
        return self._tg

    def _spawn(self, fn: Callable[..., Any], *args: Any) -> bool:
        if self._tg is None or self._stopping:
            return False
        self._tg.start_soon(fn, *args)
        return True

    async def start(self) -> None:
        """Pre-warm every enabled server in the background (bounded concurrency); returns now."""
        self._spawn(self._prewarm)

    async def _prewarm(self) -> None:
        limiter = anyio.CapacityLimiter(max(1, self.prewarm_concurrency))

        async def one(server_id: str) -> None:
            async with limiter:
                await self._quiet_refresh(server_id)

        async with anyio.create_task_group() as tg:
            for server_id in self._entries:
                if self.is_active(server_id):
                    tg.start_soon(one, server_id)

    async def _refresh_periodically(self, interval: float) -> None:
        """Re-list every active server whose list is older than ``interval`` (a TTL), for
        servers that change their tools without sending ``list_changed``. Servers in backoff
        after a failure or an empty list wait for it to expire."""
        limiter = anyio.CapacityLimiter(max(1, self.prewarm_concurrency))

        async def one(server_id: str) -> None:
            async with limiter:
                await self._quiet_refresh(server_id)

        while True:
            await anyio.sleep(interval)
            now = self._clock()
            async with anyio.create_task_group() as tg:
                for server_id, entry in self._entries.items():
                    if entry.is_due(now, interval) and self.is_active(server_id):
                        tg.start_soon(one, server_id)

    # -- reads --------------------------------------------------------------------------------
    def servers(self) -> list[McpServerConfig]:
        return [e.config for e in self._entries.values()]

    def server(self, server_id: str) -> McpServerConfig:
        return self._entry(server_id).config

    def _entry(self, server_id: str) -> ServerEntry:
        try:
            return self._entries[server_id]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none"
            raise McpError(f"unknown MCP server {server_id!r}; configured: {known}") from None

    def is_active(self, server_id: str) -> bool:
        entry = self._entries.get(server_id)
        return entry is not None and entry.enabled

    def list_tools(self, server_id: str, include_disabled: bool = False) -> list[ToolDefinition]:
        """Cached tools; never connects. A never-warmed server starts one background refresh."""
        entry = self._entries.get(server_id)
        if entry is None or not entry.enabled:
            return []
        if entry.tools is None:
            if not entry.attempted and entry.flight is None:
                entry.attempted = True
                if not self._spawn(self.warm, server_id):
                    # Outside ``running()`` there is nowhere to warm in the background; say so
                    # once instead of answering [] without a word.
                    logger.warning(
                        "MCP server %s has no cached tools yet and the catalog is not running, "
                        "so no refresh was started; run `pegboard servers refresh %s`",
                        server_id,
                        server_id,
                    )
            return []
        return list(entry.tools if include_disabled else entry.visible)

    def read_tools(self, server_id: str) -> list[ToolDefinition] | None:
        """Like :meth:`list_tools`, but None when nothing is known yet (no eviction then)."""
        entry = self._entries.get(server_id)
        if entry is None or not entry.enabled:
            return []
        tools = self.list_tools(server_id)
        return None if entry.tools is None else tools

    def status(self, server_id: str) -> ServerStatus:
        return self._entry(server_id).status()

    def statuses(self) -> list[ServerStatus]:
        return [e.status() for e in self._entries.values()]

    def stderr_tail(self, server_id: str) -> str:
        return self._entry(server_id).connection.stderr.text()

    def flags(self, server_id: str) -> dict[str, list[str]]:
        """Poisoning flags of the server's cached tools, by tool name (heuristic)."""
        entry = self._entries.get(server_id)
        return {} if entry is None else {k: list(v) for k, v in entry.flags.items()}

    def tool_hashes(self, server_id: str) -> dict[str, str]:
        return dict(self._entry(server_id).tool_hashes)

    def on_tools_changed(self, callback: ToolsChangedCallback) -> Callable[[], None]:
        """Call ``callback(server_id)`` when a server's cached list really changes."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    def on_status_changed(self, callback: ToolsChangedCallback) -> Callable[[], None]:
        """Call ``callback(server_id)`` whenever a server's state (or its error) changes."""
        self._status_listeners.append(callback)
        return lambda: (
            self._status_listeners.remove(callback) if callback in self._status_listeners else None
        )

    def _notify_status(self, server_id: str) -> None:
        for listener in list(self._status_listeners):
            try:
                listener(server_id)
            except Exception:
                logger.exception("status listener failed for MCP server %s", server_id)

    # -- refreshes ----------------------------------------------------------------------------
    async def warm(self, server_id: str) -> None:
        """Fill a cold cache; never raises. Populated or backed-off servers are left alone."""
        entry = self._entries.get(server_id)
        if entry is None or not entry.enabled or entry.tools:
            return
        if entry.backoff_until is not None and self._clock() < entry.backoff_until:
            return
        await self._quiet_refresh(server_id)

    async def wait_warm(self, server_id: str, wait_timeout: float) -> None:
        """Warm ``server_id`` if cold, waiting at most ``wait_timeout`` seconds (never raises).

        The warm runs in the catalog's task group, so giving up waiting does not abort it:
        a slow server still fills the cache for the next request.
        """
        done = anyio.Event()

        async def warm_then_signal() -> None:
            try:
                await self.warm(server_id)
            finally:
                done.set()

        with anyio.move_on_after(wait_timeout):
            if self._spawn(warm_then_signal):
                await done.wait()
            else:
                await self.warm(server_id)

    async def _quiet_refresh(self, server_id: str) -> None:
        try:
            await self.refresh_tools(server_id)
        except Exception as exc:
            logger.warning("MCP server %s: refresh failed: %s", server_id, exc)

    async def refresh_tools(self, server_id: str) -> list[ToolDefinition]:
        """List the server's tools live and cache them (single-flight). Failure re-raises."""
        entry = self._entry(server_id)
        if not entry.enabled:
            entry.set_state("disabled")
            return []
        if entry.flight is not None:
            return await entry.flight.result()
        flight = entry.begin_flight()
        shown_before = entry.visible
        try:
            # Trust may have changed in another process (`pegboard tools trust`).
            entry.set_pins(await anyio.to_thread.run_sync(self._read_pins, server_id))
            if entry.launch_changed:  # never start a redefined server before it is trusted
                raise ServerUnavailable(server_id, LAUNCH_REFUSED)
            if not entry.connection.connected:
                entry.set_state("connecting")
            raw, skipped = await entry.connection.list_tools()
        except Exception as exc:
            error = exc if isinstance(exc, McpError) else ServerUnavailable(server_id, str(exc))
            entry.flight = None  # over: a warm after the failure must start a new flight
            flight.fail(error)  # first: waiters must never be left hanging
            if not self._stopping:  # a refresh cut short by our own shutdown is no failure
                await self._record_failure(entry, exc)
            if error is exc:
                raise
            raise error from exc
        except BaseException:
            # Cancelled: waiters on this flight get an error of their own, not our cancellation.
            flight.fail(ServerUnavailable(server_id, "the refresh was cancelled"))
            raise
        finally:
            if entry.flight is flight:  # not one begun while the failure was being recorded
                entry.flight = None
        for name, why in skipped:
            logger.warning("MCP server %s: skipping tool %r: %s", server_id, name, why)
        changed = entry.accept(raw, self._clock(), self.empty_backoff)
        flight.finish(list(entry.visible))
        await self._persist(entry)
        if changed or entry.visible != shown_before:
            self._notify(server_id)
        return list(entry.visible)

    async def _record_failure(self, entry: ServerEntry, exc: Exception) -> None:
        now = self._clock()
        reason = exc.reason if isinstance(exc, ServerUnavailable) else str(exc)
        entry.fail(reason, now, now + self.failure_backoff)
        await self._persist(entry)

    async def _persist(self, entry: ServerEntry) -> None:
        record = entry.record()
        pins, entry.new_pins = entry.new_pins, {}
        try:
            await anyio.to_thread.run_sync(self.store.put, record)
            if pins:
                await anyio.to_thread.run_sync(self.store.set_pins, entry.config.id, pins)
        except CatalogError as exc:
            logger.warning("%s", exc)

    def _notify(self, server_id: str) -> None:
        for listener in list(self._listeners):
            try:
                listener(server_id)
            except Exception:
                logger.exception("tools-changed listener failed for MCP server %s", server_id)

    def _on_list_changed(self, server_id: str) -> None:
        self._spawn(self._quiet_refresh, server_id)

    def _on_connected(self, server_id: str) -> None:
        self._entries[server_id].set_state("connected")

    def _on_lost(self, server_id: str, reason: str) -> None:
        entry = self._entries[server_id]
        entry.set_state("failed", reason)
        if self._stopping or not entry.enabled:
            return
        connection = entry.connection
        if connection.failures <= 3:
            self._spawn(self._restart_after_crash, server_id, connection.retry_at)

    async def _restart_after_crash(self, server_id: str, retry_at: float) -> None:
        await anyio.sleep(max(0.0, retry_at - time.monotonic()))
        if self.is_active(server_id) and not self._entries[server_id].connection.connected:
            await self._quiet_refresh(server_id)

    # -- control ------------------------------------------------------------------------------
    async def set_enabled(self, server_id: str, enabled: bool) -> None:
        """Enable (and warm) or disable (and disconnect) a server at run time."""
        entry = self._entry(server_id)
        if entry.enabled == enabled:
            return
        before = list(entry.visible) if entry.enabled else []
        entry.enabled = enabled
        if enabled:
            entry.set_state("cold" if entry.tools is None else "connecting")
            self._spawn(self._quiet_refresh, server_id)
        else:
            entry.set_state("disabled")
            await entry.connection.close()
        if before != (list(entry.visible) if entry.enabled else []):
            self._notify(server_id)

    def update_gates(self, server_id: str, config: McpServerConfig) -> None:
        """Take ``config``'s gates (disabled, force-prompt tools, approve_content) live,
        whatever else changed; fires tools-changed so the registry re-syncs (the launch
        definition stays as started: a redefined server needs a restart)."""
        entry = self._entry(server_id)
        entry.config = entry.config.model_copy(
            update={
                "disabled_tools": config.disabled_tools,
                "force_prompt_tools": config.force_prompt_tools,
                "approve_content": config.approve_content,
            }
        )
        if entry.raw is not None:
            entry.set_pins(entry.pins)  # recomputes what is visible under the new gates
        self._notify(server_id)

    async def clear_tools(self, server_id: str) -> None:
        """Forget the server's cached list, error and backoff (on disk too): the next read or
        warm lists it again. Fires tools-changed when the list was non-empty."""
        entry = self._entry(server_id)
        had_tools = entry.forget()
        try:
            await anyio.to_thread.run_sync(self.store.delete, server_id)
        except CatalogError as exc:
            logger.warning("%s", exc)
        if had_tools:
            self._notify(server_id)

    async def restart(self, server_id: str) -> list[ToolDefinition]:
        """Close the session (stopping a stdio child), reconnect and refresh."""
        entry = self._entry(server_id)
        await entry.connection.close()
        return await self.refresh_tools(server_id)

    async def session(self, server_id: str) -> ClientSession:
        """The live session of an active server, connecting first: for what the catalog does
        not keep itself (resources, prompts). Raises ServerInactive / ServerUnavailable."""
        entry = self._entries.get(server_id)
        if entry is None or not entry.enabled:
            raise ServerInactive(server_id)
        return await entry.connection.session()

    def on_content_changed(self, callback: Callable[[], None]) -> Callable[[], None]:
        """``callback()`` whenever a server says its resources or prompts changed."""
        self._content_listeners.append(callback)
        return partial(_discard, self._content_listeners, callback)

    def _on_content_changed(self) -> None:
        for callback in list(self._content_listeners):
            try:
                callback()
            except Exception:
                logger.exception("resource/prompt change listener failed")

    async def call_tool(
        self,
        server_id: str,
        tool_name: str,
        arguments: dict[str, Any] | None = None,
        *,
        call_id: str | None = None,
        call_timeout: float | None = None,
    ) -> ToolOutput:
        """Call a tool on its server. ``is_error`` results come back as ToolOutput.is_error."""
        entry = self._entries.get(server_id)
        if entry is None or not entry.enabled:
            raise ServerInactive(server_id)
        # The execution edge: whatever route got here, hidden tools do not run.
        if entry.launch_changed:
            raise ServerUnavailable(server_id, LAUNCH_REFUSED)
        if tool_name in entry.pending or entry.config.is_tool_disabled(tool_name):
            raise ToolNotAllowed(tool_name)
        known = next((t for t in entry.tools or () if t.name == tool_name), None)
        result = await entry.connection.call_tool(
            tool_name,
            arguments or {},
            call_timeout=call_timeout,
            output_schema=known.output_schema if known is not None else None,
        )
        meta = {"mcp": {"server_id": server_id, "tool": tool_name, "call_id": call_id}}
        return call_result_to_output(result, metadata=meta)


def _discard(listeners: list[Callable[[], None]], callback: Callable[[], None]) -> None:
    if callback in listeners:
        listeners.remove(callback)


def _never_listed(entry: ServerEntry) -> bool:
    """No tools/list of the server has ever succeeded (nothing cached): a first start."""
    return entry.tools is None

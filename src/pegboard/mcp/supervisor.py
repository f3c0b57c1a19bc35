"""The server supervisor: connections, warmers, backoff, restarts, calls, content listings.

Refreshes are live and driven by warmers: pre-warm at start, ``notifications/tools/list_changed``,
explicit refresh, enabling, restarting, and restarting a crashed server with backoff. A refresh
that fails keeps the last-known-good list and records the error; every outcome is written
through the cache (:class:`~pegboard.mcp.cache.CatalogCache`) to the stores, so the next
process starts with every server's tools before any server answers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.to_thread

from pegboard.core.definition import ToolDefinition, canonical_json
from pegboard.core.events import ContentChanged
from pegboard.core.memory import after_burst
from pegboard.core.output import ToolOutput
from pegboard.core.tracing import span, tracing_on
from pegboard.errors import (
    McpError,
    PegboardError,
    ServerInactive,
    ServerUnavailable,
    ToolNotAllowed,
)
from pegboard.mcp import spawn
from pegboard.mcp.cache import CatalogCache
from pegboard.mcp.config import McpServerConfig
from pegboard.mcp.connection import McpConnection
from pegboard.mcp.results import call_result_to_output
from pegboard.mcp.server_state import ServerEntry
from pegboard.mcp.store import StoredContent
from pegboard.mcp.transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_STDERR_LOG_BYTES,
    StderrLog,
    stderr_path,
)

if TYPE_CHECKING:
    from mcp import ClientSession

logger = logging.getLogger("pegboard.mcp.catalog")


def launch_refused(server_id: str) -> str:
    """Why a redefined server is not started, naming the one command that fixes it."""
    return (
        "launch definition changed since it was trusted; it waits for trust: "
        f"`pegboard tools trust --server {server_id}`"
    )


CONTENT_KINDS = ("resources", "templates", "prompts")


@dataclass(frozen=True, slots=True)
class SupervisorSettings:
    """How the supervisor paces and bounds its servers (see :class:`McpCatalog`)."""

    prewarm_concurrency: int = 3
    empty_backoff: float = 300.0
    failure_backoff: float = 30.0
    refresh_interval: float | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    stderr_log_bytes: int = DEFAULT_STDERR_LOG_BYTES
    stderr_dir: Path | None = None


class ServerSupervisor:
    """Runs the cache's servers: connects, lists, retries, restarts and calls them."""

    def __init__(self, cache: CatalogCache, settings: SupervisorSettings) -> None:
        self.cache = cache
        self.settings = settings
        self._tg: anyio.abc.TaskGroup | None = None
        self._stopping = False
        cache.on_cold = partial(self._spawn, self.warm)

    def add(self, config: McpServerConfig) -> None:
        """Supervise one more server (its entry goes into the cache)."""
        connection = McpConnection(
            config,
            self._task_group,
            on_tools_list_changed=partial(self._on_list_changed, config.id),
            on_content_changed=partial(self._on_content_changed, config.id),
            on_lost=partial(self._on_lost, config.id),
            on_connected=partial(self._on_connected, config.id),
            max_message_bytes=self.settings.max_message_bytes,
            stderr_log=StderrLog(
                self.settings.stderr_log_bytes, stderr_path(self.settings.stderr_dir, config.id)
            ),
        )
        entry = ServerEntry(
            config, connection, on_state=self.cache.status_changed, clock=self.cache.clock
        )
        connection.first_start = partial(_never_listed, entry)
        self.cache.add(entry)

    # -- lifecycle ----------------------------------------------------------------------------
    @asynccontextmanager
    async def running(self, *, prewarm: bool = True) -> AsyncIterator[None]:
        """Run connections and warmers; on exit close every session and reap every child."""
        async with anyio.create_task_group() as tg:
            self._tg, self._stopping = tg, False
            try:
                if prewarm:
                    self.start()
                # Servers started early (pegboard.mcp.spawn) that this run will not connect
                # to now: disabled since, or no pre-warm.
                spawn.discard(keep=frozenset(self._prewarmed() if prewarm else ()))
                if self.settings.refresh_interval:
                    tg.start_soon(self._refresh_periodically, self.settings.refresh_interval)
                yield
            finally:
                self._stopping = True
                spawn.discard()
                with anyio.CancelScope(shield=True):
                    async with anyio.create_task_group() as closing:
                        for entry in self.cache.entries():
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

    def start(self) -> None:
        """Pre-warm every enabled server in the background (bounded concurrency); returns now."""
        self._spawn(self._refresh_all, [e.config.id for e in self.cache.entries()])

    def _prewarmed(self) -> list[str]:
        return [e.config.id for e in self.cache.entries() if self.cache.active(e.config.id)]

    async def _refresh_all(self, server_ids: Iterable[str]) -> None:
        limiter = anyio.CapacityLimiter(max(1, self.settings.prewarm_concurrency))

        async def one(server_id: str) -> None:
            async with limiter:
                await self._quiet_refresh(server_id)

        async with anyio.create_task_group() as tg:
            for server_id in server_ids:
                if self.cache.active(server_id) is not None:
                    tg.start_soon(one, server_id)

    async def _refresh_periodically(self, interval: float) -> None:
        """Re-list every active server whose list is older than ``interval`` (a TTL), for
        servers that change their tools without sending ``list_changed``. Servers in backoff
        after a failure or an empty list wait for it to expire."""
        while True:
            await anyio.sleep(interval)
            now = self.cache.clock()
            due = [e.config.id for e in self.cache.entries() if e.is_due(now, interval)]
            await self._refresh_all(due)

    # -- refreshes ----------------------------------------------------------------------------
    async def warm(self, server_id: str) -> None:
        """Fill a cold cache; never raises. Populated or backed-off servers are left alone."""
        entry = self.cache.active(server_id)
        if entry is None or entry.tools:
            return
        if entry.backoff_until is not None and self.cache.clock() < entry.backoff_until:
            return
        await self._quiet_refresh(server_id)

    async def wait_warm(self, server_id: str, wait_timeout: float) -> None:
        """Warm ``server_id`` if cold, waiting at most ``wait_timeout`` seconds (never raises).

        The warm runs in the supervisor's task group, so giving up waiting does not abort it:
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
            # A refresh cut short by our own shutdown (a CLI command ending while a server's
            # list_changed refresh runs) failed nothing.
            if not self._stopping:
                logger.warning("MCP server %s: refresh failed: %s", server_id, exc)

    async def refresh_tools(self, server_id: str) -> list[ToolDefinition]:
        """List the server's tools live and cache them (single-flight). Failure re-raises."""
        entry = self.cache.entry(server_id)
        if not entry.enabled:
            entry.set_state("disabled")
            return []
        if entry.flight is not None:
            return await entry.flight.result()
        flight = entry.begin_flight()
        shown_before = entry.visible
        try:
            # Trust may have changed in another process (`pegboard tools trust`).
            entry.set_pins(await anyio.to_thread.run_sync(self.cache.read_pins, server_id))
            if entry.launch_changed:  # never start a redefined server before it is trusted
                raise ServerUnavailable(server_id, launch_refused(server_id))
            if not entry.connection.connected:
                entry.set_state("connecting")
            raw, skipped, raw_json = await _listing(entry)
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
        changed = entry.accept(raw, self.cache.clock(), self.settings.empty_backoff, raw_json)
        flight.finish(list(entry.visible))
        await self.cache.persist(entry)
        if changed or entry.visible != shown_before:
            self.cache.tools_changed(server_id)
        after_burst()  # the listing's JSON, models and the registry sync were short-lived
        return list(entry.visible)

    async def _record_failure(self, entry: ServerEntry, exc: Exception) -> None:
        now = self.cache.clock()
        reason = exc.reason if isinstance(exc, ServerUnavailable) else str(exc)
        entry.fail(reason, now, now + self.settings.failure_backoff)
        await self.cache.persist(entry, tools=False)

    def _on_list_changed(self, server_id: str) -> None:
        self._spawn(self._quiet_refresh, server_id)

    def _on_content_changed(self, server_id: str) -> None:
        self.cache.events.publish(ContentChanged(server_id))

    def _on_connected(self, server_id: str) -> None:
        self.cache.entry(server_id).set_state("connected")

    def _on_lost(self, server_id: str, reason: str) -> None:
        entry = self.cache.entry(server_id)
        entry.set_state("failed", reason)
        if self._stopping or not entry.enabled:
            return
        connection = entry.connection
        if connection.failures <= 3:
            self._spawn(self._restart_after_crash, server_id, connection.retry_at)

    async def _restart_after_crash(self, server_id: str, retry_at: float) -> None:
        await anyio.sleep(max(0.0, retry_at - time.monotonic()))
        entry = self.cache.active(server_id)
        if entry is not None and not entry.connection.connected:
            await self._quiet_refresh(server_id)

    # -- control ------------------------------------------------------------------------------
    async def set_enabled(self, server_id: str, enabled: bool) -> None:
        """Enable (and warm) or disable (and disconnect) a server at run time."""
        entry = self.cache.entry(server_id)
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
            self.cache.tools_changed(server_id)

    async def restart(self, server_id: str) -> list[ToolDefinition]:
        """Close the session (stopping a stdio child), reconnect and refresh."""
        await self.cache.entry(server_id).connection.close()
        return await self.refresh_tools(server_id)

    async def session(self, server_id: str) -> ClientSession:
        """The live session of an active server, connecting first: for what the catalog does
        not model (resource reads, prompt gets). Raises ServerInactive / ServerUnavailable."""
        entry = self.cache.active(server_id)
        if entry is None:
            raise ServerInactive(server_id)
        return await entry.connection.session()

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
        entry = self.cache.active(server_id)
        if entry is None:
            raise ServerInactive(server_id)
        # The execution edge: whatever route got here, hidden tools do not run.
        if entry.launch_changed:
            raise ServerUnavailable(server_id, launch_refused(server_id))
        if tool_name in entry.pending or entry.config.is_tool_disabled(tool_name):
            raise ToolNotAllowed(tool_name)
        known = entry.by_name.get(tool_name)  # a dict: 5,000 tools are no slower to call
        sent = entry.connection.call_tool(  # runs where it is awaited: in the span when tracing
            tool_name,
            arguments or {},
            call_timeout=call_timeout,
            output_schema=known.output_schema if known is not None else None,
        )
        if tracing_on():  # the SDK's client span nests inside
            attributes = {"pegboard.server": server_id, "gen_ai.tool.name": tool_name}
            with span("pegboard.upstream", **attributes):
                result = await sent
        else:  # no null context entered and left (as in calls.audit.audited)
            result = await sent
        meta = {"mcp": {"server_id": server_id, "tool": tool_name, "call_id": call_id}}
        return call_result_to_output(result, metadata=meta)

    async def refresh_content(self, server_id: str) -> bool:
        """List the server's resources, templates and prompts (bounded by its
        ``list_timeout``) into the cache; True if a list changed. A failure is logged and
        keeps the last good lists."""
        import mcp_types  # lazy: the MCP SDK
        from mcp.shared.exceptions import MCPError

        config = self.cache.entry(server_id).config
        # what the cache held when this listing began: a listing stored meanwhile (another
        # replica's, read from the shared store, or this process's own) is newer than ours
        began = {kind: self.cache.content(server_id, kind) for kind in CONTENT_KINDS}
        try:
            with anyio.fail_after(config.list_timeout):
                session = await self.session(server_id)
                # negotiated when the session opened (initialize, or discover on 2026-07-28,
                # where a second initialize is refused)
                capabilities = session.server_capabilities or mcp_types.ServerCapabilities()
                listed: dict[str, list[Any]] = {kind: [] for kind in CONTENT_KINDS}
                if capabilities.resources is not None:
                    listed["resources"] = list((await session.list_resources()).resources)
                    templates = await session.list_resource_templates()
                    listed["templates"] = list(templates.resource_templates)
                if capabilities.prompts is not None:
                    listed["prompts"] = list((await session.list_prompts()).prompts)
        except (PegboardError, TimeoutError, MCPError) as exc:
            logger.warning("MCP server %s: listing resources/prompts failed: %s", server_id, exc)
            return False
        changed = False
        for kind, items in listed.items():
            dumped = tuple(
                i.model_dump(by_alias=True, mode="json", exclude_none=True) for i in items
            )
            cached = self.cache.content(server_id, kind)
            if cached is not None and cached.items == dumped:
                continue
            if cached is not began[kind]:
                logger.info(
                    "MCP server %s: %s stored while listing; keeping the stored list",
                    server_id,
                    kind,
                )
                continue
            changed = True
            await self.cache.set_content(StoredContent(server_id, kind, config.fingerprint, dumped))
        return changed


def _never_listed(entry: ServerEntry) -> bool:
    """No tools/list of the server has ever succeeded (nothing cached): a first start."""
    return entry.tools is None


async def _listing(
    entry: ServerEntry,
) -> tuple[list[dict[str, Any]], list[tuple[str, str]], str | None]:
    """The server's tools, the tools skipped as invalid and, when it was made, the listing's
    canonical JSON. A server with a cached listing is read once without the SDK's client
    (:meth:`~pegboard.mcp.connection.McpConnection.tools_as_sent`): an answer equal to the
    cached listing is taken as it came, a changed one read as the SDK's client reads it."""
    if entry.has_cached_listing:
        sent = await entry.connection.tools_as_sent()
        if sent is not None:
            sent_json = canonical_json(sent.tools)
            if entry.lists_as_cached(sent.tools, sent_json):
                return sent.tools, sent.skipped, sent_json
            del sent_json
            return sent.read(), sent.skipped, None
    raw, skipped = await entry.connection.list_tools()
    return raw, skipped, None

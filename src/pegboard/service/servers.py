"""Servers: their statuses, collisions, what waits for trust, refreshes, enabling, logs."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from pegboard.config import LoadedConfig, write_config
from pegboard.core.redact import mask
from pegboard.errors import ConfigError

if TYPE_CHECKING:
    from pegboard.mcp.status import ReplicaView, ServerStatus
    from pegboard.mcp.sync import McpCollision
    from pegboard.service.app import Service


class UnknownServer(ConfigError):
    """A server id that is not configured (the message names the configured ones)."""


@dataclass(frozen=True, slots=True)
class ServerLog:
    """A server's kept stderr (its last start), secrets masked, and the file it is kept in."""

    path: Path
    text: str


@dataclass(frozen=True, slots=True)
class RefreshResult:
    """One server's refresh: its tool count, or the error."""

    server_id: str
    ok: bool
    tools: int = 0
    error: str | None = None
    seconds: float = 0.0


class ServerService:
    """The configured MCP servers of one config."""

    def __init__(self, service: Service) -> None:
        self._service = service

    @property
    def loaded(self) -> LoadedConfig:
        return self._service.loaded

    def ids(self, wanted: Sequence[str] | None = None) -> list[str]:
        """``wanted`` checked against the config (all servers when empty)."""
        known = list(self.loaded.config.servers)
        unknown = [i for i in wanted or () if i not in known]
        if unknown:
            raise UnknownServer(
                f"unknown {'server id' if len(unknown) == 1 else 'server ids'}: "
                f"{', '.join(unknown)}; configured: {', '.join(known) or 'none'}"
            )
        return list(wanted) if wanted else known

    def statuses(self, wanted: Sequence[str] | None = None) -> list[ServerStatus]:
        """Each server's state, last error, cached tools and trust (read from the catalog's
        cache: nothing is started)."""
        catalog = self._service.runtime.catalog
        return [catalog.status(sid) for sid in self.ids(wanted)]

    def replica_views(self, wanted: Sequence[str] | None = None) -> list[ReplicaView] | None:
        """Each replica's view of the ``wanted`` servers, by server then replica, read from
        the team store (None without one: this machine's view is the only one)."""
        board = self._service.runtime.replicas
        if board is None:
            return None
        ids = set(self.ids(wanted))
        return [v for v in board.views() if v.server_id in ids]

    def excluded(self, server_id: str | None = None) -> list[McpCollision]:
        """Tools left out because several claim one wire name (of ``server_id``, or all)."""
        return self._service.runtime.excluded(server_id)

    def waiting_for_trust(self, wanted: Sequence[str] | None = None) -> list[ServerStatus]:
        """The servers with a changed launch definition, tools waiting for trust or flags."""
        return [s for s in self.statuses(wanted) if s.launch_changed or s.pending_trust or s.flags]

    async def refresh(
        self,
        wanted: Sequence[str] | None = None,
        *,
        concurrency: int = 4,
        done: Callable[[RefreshResult], None] = lambda result: None,
    ) -> list[RefreshResult]:
        """Connect to the enabled ``wanted`` servers and cache their tools (``done`` hears
        each result as it comes); in the order asked."""
        ids = [sid for sid in self.ids(wanted) if self.loaded.config.servers[sid].enabled]
        runtime = self._service.runtime
        limiter = anyio.CapacityLimiter(max(1, concurrency))
        results: dict[str, RefreshResult] = {}

        async def one(sid: str) -> None:
            async with limiter:
                started = time.perf_counter()
                try:
                    tools = await runtime.catalog.refresh_tools(sid)
                    result = RefreshResult(sid, True, tools=len(tools))
                except Exception as exc:
                    result = RefreshResult(sid, False, error=str(exc))
                seconds = round(time.perf_counter() - started, 3)
                results[sid] = result = _with_seconds(result, seconds)
                done(result)

        async with runtime.running(), anyio.create_task_group() as tg:
            for sid in ids:
                tg.start_soon(one, sid)
        return [results[sid] for sid in ids]

    def set_enabled(self, server_id: str, enabled: bool) -> Path:
        """Enable or disable ``server_id`` in the config file (a running gateway follows at
        once); returns the file written."""
        self.ids([server_id])
        raw = dict(self.loaded.raw)
        servers = {k: dict(v) for k, v in raw.get("servers", {}).items()}
        if enabled:
            servers[server_id].pop("enabled", None)
        else:
            servers[server_id]["enabled"] = False
        raw["servers"] = servers
        write_config(self.loaded.path, raw)
        return self.loaded.path

    async def set_enabled_now(self, server_id: str, enabled: bool) -> Path:
        """:meth:`set_enabled`, then the runtime applies the written config at once (the
        admin page shows the new state on its next read, not after the file watcher's poll)."""
        path = self.set_enabled(server_id, enabled)
        runtime = self._service.runtime
        await runtime.apply_config(await anyio.to_thread.run_sync(runtime.config_source.load))
        return path

    def remove(self, server_id: str) -> list[str]:
        """Remove ``server_id`` from the config file and from every profile's mcp_servers
        (other comments and layout kept), then forget its cached tools, content lists, trust
        pins and state; returns the profiles it was unlinked from."""
        import copy

        self.ids([server_id])
        raw = copy.deepcopy(self.loaded.raw)
        del raw["servers"][server_id]
        unlinked = []
        for name, profile in raw.get("profiles", {}).items():
            linked = profile.get("mcp_servers")
            if isinstance(linked, list) and server_id in linked:
                profile["mcp_servers"] = [s for s in linked if s != server_id]
                unlinked.append(name)
        write_config(self.loaded.path, raw)
        if self.loaded.catalog_path.exists():
            catalog = self._service.runtime.catalog
            catalog.store.delete(server_id)
            catalog.store.set_pins(server_id, {}, replace=True)
        return unlinked

    def logs(self, server_id: str) -> ServerLog | None:
        """What the server wrote to stderr during its last start, configured secrets
        masked; None when it has not been started since (nothing kept)."""
        from pegboard.mcp.transport import stderr_path

        self.ids([server_id])
        path = stderr_path(self.loaded.stderr_dir, server_id)
        if path is None:
            return None
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return None
        return ServerLog(path, mask(text, self.loaded.config.servers[server_id].secrets))

    async def warm_allowed(self, wait: float) -> None:
        """Warm the profile's cold servers, waiting at most ``wait`` seconds each (together),
        then re-sync the tools (``pegboard chat`` before its first turn)."""
        runtime = self._service.runtime
        catalog = runtime.catalog
        async with anyio.create_task_group() as group:
            for server in catalog.servers():
                sid = server.id
                if runtime.server_allowed(sid) and catalog.read_tools(sid) is None:
                    group.start_soon(catalog.wait_warm, sid, wait)
        # A warm's waiters are released before the catalog tells its subscribers (the
        # runtime's re-sync) about the new tools: sync now so the first turn sees them.
        runtime.resync()

    def all_statuses(self) -> list[ServerStatus]:
        return self._service.runtime.catalog.statuses()


def _with_seconds(result: RefreshResult, seconds: float) -> RefreshResult:
    return RefreshResult(result.server_id, result.ok, result.tools, result.error, seconds)

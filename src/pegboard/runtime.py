"""The tool runtime behind ``pegboard serve`` and the CLI: config -> catalog -> registry.

One :class:`ToolRuntime` owns the MCP catalog (persistent cache in the data directory), a
registry holding the ``pegboard.tools`` entries (the built-ins ``web_search``, ``web_fetch``,
``kb_search``, ``kb_list`` and installed plugins, each gated by ``applies`` on the profile)
and the tools synced from the catalog's cache, the profile's scope, the call session (audit sink,
grants) and the :class:`~pegboard.toolsets.exposure.RegistrySurface` a gateway serves and the
CLI calls through (one composed toolset: :mod:`pegboard.toolsets`). It never waits on an
upstream server to answer a read: every change of a server's cached tools re-syncs the registry
and refreshes the surface, which notifies the connected clients.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

from pegboard.builtin.plugins import load_tool_entries
from pegboard.calls.approval import unmatched_gates
from pegboard.calls.audit import AuditSink, FanOut
from pegboard.calls.audit_log import AUDIT_FILE, AuditLog
from pegboard.calls.session import CallSession
from pegboard.config import LoadedConfig, PegboardConfig, load_config
from pegboard.core.redact import redact_logs
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import AssistantSettings, ModelInfo, ToolApplyScope
from pegboard.core.status import NamespaceStatus
from pegboard.deferral.tool_exec import ExecSettings
from pegboard.errors import ConfigError, PegboardError
from pegboard.mcp import McpCatalog, McpCollision, SqliteCatalogStore, sync_mcp_tools_to_registry
from pegboard.mcp.status import namespace_statuses
from pegboard.sandbox.engine import Sandbox, require_monty
from pegboard.search import default_index
from pegboard.search.interface import SearchIndex
from pegboard.search.synced import LazyRegistryIndex
from pegboard.toolsets.exposure import RegistrySurface

logger = logging.getLogger("pegboard.gateway")


@dataclass(frozen=True, slots=True)
class RuntimeOptions:
    """Per-run overrides of the config (``pegboard serve`` options)."""

    profile: str | None = None
    context_window: int | None = None
    defer: bool | None = None
    prewarm: bool = True
    audit: AuditSink | None = None


def default_model_window(config: PegboardConfig) -> int | None:
    """The context window of the config's default model (None without models or window)."""
    if not config.models:
        return None
    try:
        return config.model()[1].context_window
    except ConfigError:
        return None


class ToolRuntime:
    """Catalog, registry and exposed surface for one profile of one config."""

    def __init__(self, loaded: LoadedConfig, options: RuntimeOptions | None = None) -> None:
        self.loaded = loaded
        self.options = options or RuntimeOptions()
        config = loaded.config
        # Configured secrets (server env/header values, the gateway token) and URL
        # credentials never reach a log line, whoever logs it (the SDK logs request URLs).
        redact_logs(
            [
                *(v for server in config.servers.values() for v in server.secrets),
                *([loaded.gateway_token] if loaded.gateway_token else []),
            ]
        )
        profile = config.profile(self.options.profile)
        self.settings: AssistantSettings = profile.to_settings()
        # The window deferral is sized for: --context-window, the profile's, the config's,
        # else the default model's (the model a client of this gateway most likely runs).
        self.context_window = (
            self.options.context_window
            or profile.context_window
            or config.context_window
            or default_model_window(config)
        )
        servers = list(config.servers.values())
        self.catalog = McpCatalog(
            servers, SqliteCatalogStore(loaded.catalog_path), stderr_dir=loaded.stderr_dir
        )
        # Every session of this runtime (gateway, CLI) records each call in the data directory.
        self.audit = AuditLog(loaded.data_dir / AUDIT_FILE)
        self.registry = ToolRegistry()
        self.selected: frozenset[str] = frozenset()
        self.calls = CallSession(audit=self._audit_sink())
        self.gate_problems: tuple[str, ...] = ()
        self.plugin_tools: frozenset[str] = frozenset()
        self._register_plugins()
        self.collisions: tuple[McpCollision, ...] = ()
        self.resync(refresh_surface=False)
        # The sandbox's workers start on the first tool_exec run, not here; stopped on exit.
        self.sandbox: Sandbox | None = None
        tool_exec = None
        if config.meta.tool_exec:
            require_monty()
            self.sandbox = Sandbox()
            tool_exec = ExecSettings(sandbox=self.sandbox)
        defer = self.options.defer if self.options.defer is not None else config.meta.defer
        self.index: SearchIndex = self._search_index()  # shared by the surface and integrations
        if tool_exec is not None and not defer:
            logger.warning(
                "[meta] tool_exec is on but deferral is off (--no-defer or [meta] defer = false); "
                "tool_exec is offered only beside the meta-tools of deferred tools"
            )
        self.surface = RegistrySurface(
            self.registry,
            self.scope,
            context_window=self.context_window,
            defer=defer,
            statuses=self.namespace_statuses,
            session=self.calls,
            index=self.index,
            tool_exec=tool_exec,
        )

    def _audit_sink(self) -> AuditSink:
        """The audit log file, plus the sink given in the options (if any)."""
        extra = self.options.audit
        return self.audit if extra is None else FanOut((self.audit, extra))

    def _search_index(self) -> SearchIndex:
        """The registry's shared index with the ranker ``[meta] search`` names, built when a
        search first runs (listing tools never loads the ranker)."""
        if self.loaded.config.meta.search == "lexical":
            return LazyRegistryIndex(self.registry, lambda: default_index(dense=False))
        cache = self.loaded.data_dir / "vectors"
        return LazyRegistryIndex(self.registry, lambda: default_index(cache_dir=cache))

    # -- scope -------------------------------------------------------------------------------
    def scope(self) -> ToolApplyScope:
        model = ModelInfo(context_window=self.context_window)
        return ToolApplyScope(assistant=self.settings, mcp_tool_ids=self.selected, model=model)

    def server_allowed(self, server_id: str) -> bool:
        """Whether the profile's MCP mode lets ``server_id`` contribute tools."""
        mode = self.settings.mcp_mode
        if mode == "disabled" or not self.catalog.is_active(server_id):
            return False
        return mode == "auto" or server_id in self.settings.mcp_server_ids

    def namespace_statuses(self) -> dict[str, NamespaceStatus]:
        return namespace_statuses(self.catalog.statuses(), self.settings)

    # -- sync --------------------------------------------------------------------------------
    def resync(self, *, refresh_surface: bool = True) -> None:
        """Register the cached tools of every allowed server and select the profile's set.

        Cache-only: this is the cache-read half of ``resolve_assistant_mcp_tool_ids`` (which
        may wait for cold servers); a cold server contributes its tools when it warms. The
        profile's ``disabled_tools`` are left out by the toolset, on every route.
        """
        report = sync_mcp_tools_to_registry(self.registry, self.catalog, assistant=self.settings)
        self.collisions = tuple(report.collisions)  # shown by `servers status`, `tools list`
        self.selected = frozenset(
            entry.name
            for entry in self.registry.get_all()
            if entry.source is not None and self.server_allowed(entry.source.server_id)
        )
        self._check_gates()
        if refresh_surface:
            self.surface.refresh()

    def _register_plugins(self) -> None:
        """Register the ``pegboard.tools`` entries (the built-ins and installed plugins).

        Their entries read the config they were built from (providers, ``[web_fetch]``), so a
        re-read config registers them again; a tool a plugin no longer returns leaves.
        """
        entries = load_tool_entries(self.loaded.config, self.loaded.data_dir)
        names = frozenset(e.name for e in entries)
        self.registry.register_many(entries)
        self.registry.deregister_many(self.plugin_tools - names)
        self.plugin_tools = names

    def excluded(self, server_id: str | None = None) -> list[McpCollision]:
        """Tools left out because several claim one wire name (of ``server_id``, or all)."""
        return [
            c
            for c in self.collisions
            if server_id is None or any(s.server_id == server_id for s in c.sources)
        ]

    def _check_gates(self) -> None:
        """Warn about approval gates (force-prompt entries) that gate no registered tool.

        A gate that matches nothing leaves the tool it was meant for ungated, silently; it is
        reported whenever the set of such gates changes (not on every re-sync). Servers whose
        tools are not known yet are skipped until they are.
        """
        problems = tuple(
            unmatched_gates(
                self.registry.get_all(),
                servers=self.catalog.servers(),
                assistant_gates=self.settings.force_prompt_tools,
                assistant_disabled=self.settings.disabled_tools,
            )
        )
        if problems != self.gate_problems:
            for problem in problems:
                logger.warning("approval gate matches no tool: %s", problem)
        self.gate_problems = problems

    def _on_tools_changed(self, server_id: str) -> None:
        logger.info("tools of MCP server %s changed; re-syncing", server_id)
        self.resync()

    # -- config changes ----------------------------------------------------------------------
    async def apply_config(self, loaded: LoadedConfig) -> None:
        """Take over a changed config while serving; a gate never silently fails open.

        Live: enabled flags, the profile's settings, every server's tool gates
        (``disabled_tools``, ``force_prompt_tools``) and the built-ins' config (web_search
        providers, ``[web_fetch]``, the profile's knowledge bases). A removed server is
        disabled at once. An added or redefined server (command, args, env, cwd, url,
        headers) needs a restart: that is logged as an error, and a redefined one keeps its
        old launch definition until then (its new gates already apply). So does switching
        ``[meta] tool_exec`` (logged).
        """
        old, new = dict(self.loaded.config.servers), dict(loaded.config.servers)
        added = sorted(set(new) - set(old))
        redefined = sorted(
            k for k in set(old) & set(new) if old[k].fingerprint != new[k].fingerprint
        )
        if added or redefined:
            logger.error(
                "MCP servers added (%s) or redefined (%s) while serving: restart pegboard serve "
                "to use them; until then added servers are absent and redefined ones run their "
                "old command",
                ", ".join(added) or "none",
                ", ".join(redefined) or "none",
            )
        if loaded.config.meta.tool_exec != (self.sandbox is not None):
            logger.warning("[meta] tool_exec was switched: restart pegboard serve to apply it")
        self.loaded = loaded
        self.settings = loaded.config.profile(self.options.profile).to_settings()
        for sid in sorted(set(old) - set(new)):
            logger.warning("MCP server %s was removed from the config: disabled", sid)
            await self.catalog.set_enabled(sid, False)
        self._register_plugins()
        for sid, server in new.items():
            if sid not in old:
                continue
            if old[sid].gates() != server.gates():
                logger.info("MCP server %s: tool gates changed; applied", sid)
                self.catalog.update_gates(sid, server)
            if old[sid].enabled != server.enabled:
                logger.info("MCP server %s %s", sid, "enabled" if server.enabled else "disabled")
                await self.catalog.set_enabled(sid, server.enabled)
        self.resync()

    async def watch_config(self, interval: float = 1.0) -> None:
        """Forever: re-read the config file when it changes and apply it (run in a task)."""
        path = self.loaded.path

        def stamp() -> float | None:
            try:
                return path.stat().st_mtime
            except OSError:
                return None

        seen = stamp()
        while True:
            await anyio.sleep(interval)
            current = stamp()
            if current == seen:
                continue
            seen = current
            try:
                await self.apply_config(load_config(path))
            except PegboardError as exc:
                logger.warning("ignoring the changed config: %s", exc)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ToolRuntime]:
        """Run the catalog (pre-warm in the background); on exit every child is stopped
        (upstream servers and the tool_exec sandbox's workers)."""
        unsubscribe = self.catalog.on_tools_changed(self._on_tools_changed)
        try:
            async with self.catalog.running(prewarm=self.options.prewarm):
                yield self
        finally:
            unsubscribe()
            self.catalog.store.close()
            if self.sandbox is not None:
                with anyio.CancelScope(shield=True):
                    await self.sandbox.aclose()

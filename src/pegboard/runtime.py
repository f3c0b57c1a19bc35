"""The composition root behind ``pegboard serve``, the CLI and ``open_runtime``.

One :class:`ToolRuntime` owns the MCP catalog, a registry holding the ``pegboard.tools``
entries (the built-ins ``web_search``, ``web_fetch``, ``kb_search``, ``kb_list`` and installed
plugins, each gated by ``applies`` on the profile) and the tools synced from the catalog's
cache, the profile's scope, the call session (audit sink, grants) and the
:class:`~pegboard.toolsets.exposure.RegistrySurface` a gateway serves and the CLI calls through
(one composed toolset: :mod:`pegboard.toolsets`). It never waits on an upstream server to
answer a read: every change of a server's cached tools re-syncs the registry and refreshes the
surface, which notifies the connected clients.

Its components (:class:`RuntimeComponents`: catalog store and replica state, audit sink, grant
and pending-approval stores, search index, event bus, config source) are injected; what is not
given comes from :func:`default_components`. Constructing a runtime does no I/O:
``await runtime.start()`` opens the stores and builds the parts off the event loop (a sync
caller's first read of a part, such as ``runtime.registry``, builds them on demand).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import anyio

from pegboard.builtin.plugins import load_tool_entries
from pegboard.calls.approval import unmatched_gates
from pegboard.calls.audit import AuditSink, CallRecord, FanOut
from pegboard.calls.audit_log import AUDIT_FILE, AuditLog
from pegboard.calls.grants import GrantStore, MemoryGrantStore
from pegboard.calls.limits import CallLimits, Limits, RateLimiter
from pegboard.calls.pending import PendingApprovalStore
from pegboard.calls.pending_sqlite import SqlitePendingStore
from pegboard.calls.session import CallSession
from pegboard.config import LoadedConfig, load_config
from pegboard.config.source import ConfigSource, FileConfigSource
from pegboard.core.access import AccessPolicy, AccessViews
from pegboard.core.events import CallFinished, EventBus, ToolsChanged
from pegboard.core.redact import redact_logs
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import AssistantSettings, ModelInfo, ToolApplyScope
from pegboard.core.tokens import BpeTokenCounter, default_token_counter
from pegboard.deferral.kept_counts import keep_counts
from pegboard.errors import ConfigError, PegboardError, UserError
from pegboard.mcp import McpCatalog, McpCollision, sync_mcp_tools_to_registry
from pegboard.mcp.checked import default_checked
from pegboard.mcp.poison import default_known
from pegboard.mcp.store import CatalogStore, ReplicaStateStore
from pegboard.mcp.store_sqlite import SqliteCatalogStore
from pegboard.search import default_index
from pegboard.search.interface import SearchIndex
from pegboard.search.synced import LazyRegistryIndex
from pegboard.toolsets.exposure import RegistrySurface

if TYPE_CHECKING:
    from pegboard.core.status import NamespaceStatus
    from pegboard.mcp.replicas_pg import PostgresReplicaBoard
    from pegboard.postgres import Database
    from pegboard.sandbox.engine import Sandbox

logger = logging.getLogger("pegboard.gateway")
PENDING_FILE = "approvals.sqlite"
# The built tool_search index of each catalog (pegboard.search.stored), beside the vectors.
SEARCH_INDEX_DIR = "search-index"
TOKEN_COUNTS_FILE = "token-counts.bin"
# Digests of the tool definitions that passed the listing checks (pegboard.mcp.checked).
CHECKED_FILE = "checked-definitions.bin"
# The poisoning flags of the tool definitions checked before (pegboard.mcp.poison).
FLAGS_FILE = "poison-flags.bin"


@dataclass(frozen=True, slots=True)
class RuntimeOptions:
    """Per-run overrides of the config (``pegboard serve`` options)."""

    profile: str | None = None
    context_window: int | None = None
    defer: bool | None = None
    prewarm: bool = True
    audit: AuditSink | None = None
    # Build tool_search's index in a child process (pegboard serve: a long-lived process
    # keeps none of the build's memory).
    build_index_apart: bool = False


@dataclass(frozen=True, slots=True)
class RuntimeComponents:
    """What a runtime is made of; each one left None comes from :func:`default_components`.

    ``store`` holds the catalog's shared data and ``state`` this process's view of each server
    (default: the SQLite file of the data directory, for both); ``audit`` records every call
    (default: the audit log file); ``grants`` and ``pending`` are the approval stores
    (:mod:`pegboard.calls`; default: the team store's with ``[store] url``, else grants in
    memory and pending approvals in the data directory's file); ``search_index`` builds the
    index behind ``tool_search`` over the registry (default: the ranker ``[meta] search`` names,
    built at the first search); ``events`` is the one event bus; ``config`` is where
    :meth:`ToolRuntime.watch_config` reads changes (default: the config file);
    ``rate_limiter`` holds the buckets of ``[limits]`` (default: this process's memory; a team
    store shares them across replicas).
    """

    store: CatalogStore | None = None
    state: ReplicaStateStore | None = None
    audit: AuditSink | None = None
    grants: GrantStore | None = None
    pending: PendingApprovalStore | None = None
    search_index: Callable[[ToolRegistry], SearchIndex] | None = None
    events: EventBus | None = None
    config: ConfigSource | None = None
    rate_limiter: RateLimiter | None = None


@dataclass(frozen=True, slots=True)
class ResolvedComponents:
    """Every component of a runtime, defaults filled in (see :class:`RuntimeComponents`)."""

    store: CatalogStore
    state: ReplicaStateStore | None
    audit: AuditSink
    grants: GrantStore
    pending: PendingApprovalStore
    search_index: Callable[[ToolRegistry], SearchIndex]
    events: EventBus
    config: ConfigSource
    rate_limiter: RateLimiter | None = None
    replicas: PostgresReplicaBoard | None = None  # the replicas' views (a team store only)
    made: tuple[Any, ...] = ()  # the stores of calls made here (closed with the runtime)


def default_components(
    loaded: LoadedConfig, given: RuntimeComponents | None = None
) -> ResolvedComponents:
    """``given`` with every missing component made from ``loaded`` (this opens the SQLite
    catalog store of the data directory: :meth:`ToolRuntime.start` calls it)."""
    given = given or RuntimeComponents()
    url = loaded.store_url
    db: Database | None = None
    wanted = (given.store, given.grants, given.pending, given.audit, given.rate_limiter)
    if url is not None and None in wanted:
        from pegboard.postgres import Database  # lazy: psycopg is an extra

        db = Database(url)
    store, state = given.store, given.state
    if store is None:
        store, state = _default_stores(loaded, state, db)
    grants, pending = given.grants, given.pending
    made: list[Any] = []
    if grants is None:
        grants = _pg_grants(db) if db is not None else MemoryGrantStore()
        made.append(grants)
    if pending is None:
        # Without a team store, a file in the data directory: the admin page, `pegboard
        # approvals` and `pegboard ui` decide the questions any gateway (stdio too) queued.
        pending = (
            _pg_pending(db)
            if db is not None
            else SqlitePendingStore(loaded.data_dir / PENDING_FILE)
        )
        made.append(pending)
    audit = given.audit
    if audit is None:
        audit = _default_audit(loaded, db)
        made.append(audit)
    rate_limiter = given.rate_limiter
    if rate_limiter is None and db is not None:  # the replicas share the buckets
        rate_limiter = _pg_rate_limiter(db)
        made.append(rate_limiter)
    replicas = None
    if db is not None:
        from pegboard.mcp.replicas_pg import PostgresReplicaBoard

        replicas = PostgresReplicaBoard(db, stale_after=loaded.config.store.replica_stale_after)
        made.append(replicas)
    return ResolvedComponents(
        store=store,
        state=state,
        audit=audit,
        grants=grants,
        pending=pending,
        search_index=given.search_index or _default_index(loaded),
        events=given.events if given.events is not None else EventBus(),
        config=given.config if given.config is not None else FileConfigSource(loaded.path),
        rate_limiter=rate_limiter,
        replicas=replicas,
        made=tuple(made),
    )


def _default_stores(
    loaded: LoadedConfig, state: ReplicaStateStore | None, db: Database | None
) -> tuple[CatalogStore, ReplicaStateStore]:
    """The catalog store of the config: the team store's PostgreSQL database (``db``) when
    ``[store] url`` (or ``PEGBOARD_STORE_URL``) names one, else the data directory's SQLite
    file. A replica's own view of its servers (state, error, backoff) stays in that local
    file either way: each replica supervises its own upstream children."""
    if db is None:
        sqlite = SqliteCatalogStore(loaded.catalog_path)
        return sqlite, state if state is not None else sqlite
    from pegboard.mcp.store_pg import PostgresCatalogStore  # lazy: psycopg is an extra

    shared = PostgresCatalogStore(db)
    return shared, state if state is not None else SqliteCatalogStore(loaded.catalog_path)


def _default_audit(loaded: LoadedConfig, db: Database | None) -> AuditSink:
    """The audit log file of the data directory, or with a team store its audit table
    (spooled to the data directory while the database is lost)."""
    on_failure = loaded.config.audit.on_failure
    if db is None:
        return AuditLog(loaded.data_dir / AUDIT_FILE, on_failure=on_failure)
    from pegboard.calls.audit_pg import SPOOL_FILE, PostgresAuditSink

    return PostgresAuditSink(db, loaded.data_dir / SPOOL_FILE, on_failure=on_failure)


def _pg_rate_limiter(db: Database) -> RateLimiter:
    """The replicas' shared buckets; while the store is lost, this process's own."""
    from pegboard.calls.fallback import FallbackRateLimiter
    from pegboard.calls.limits_pg import PostgresRateLimiter

    return FallbackRateLimiter(PostgresRateLimiter(db))


def _pg_grants(db: Database) -> GrantStore:
    """The team store's grants; while it is lost, in memory (:mod:`pegboard.calls.fallback`)."""
    from pegboard.calls.fallback import FallbackGrantStore
    from pegboard.calls.grants_pg import PostgresGrantStore

    return FallbackGrantStore(PostgresGrantStore(db))


def _pg_pending(db: Database) -> PendingApprovalStore:
    """The team store's pending approvals; while it is lost, asked from memory."""
    from pegboard.calls.fallback import FallbackPendingStore
    from pegboard.calls.pending_pg import PostgresPendingStore

    return FallbackPendingStore(PostgresPendingStore(db))


def _default_index(
    loaded: LoadedConfig, *, build_apart: bool = False
) -> Callable[[ToolRegistry], SearchIndex]:
    """The registry's shared index with the ranker ``[meta] search`` names, loaded from the
    data directory or built when a search first runs (listing tools never loads the ranker);
    ``build_apart``: built in a child process."""
    dense = loaded.config.meta.search != "lexical"
    cache, store = loaded.data_dir / "vectors", loaded.data_dir / SEARCH_INDEX_DIR

    def make() -> SearchIndex:
        return default_index(dense=dense, cache_dir=cache, store=store, build_apart=build_apart)

    return lambda registry: LazyRegistryIndex(registry, make)


def _url_password(loaded: LoadedConfig) -> list[str]:
    """The team store URL's password, if any (for the log redaction)."""
    from urllib.parse import unquote, urlsplit

    try:
        url = loaded.store_url
        password = urlsplit(url).password if url else None
    except (ConfigError, ValueError):
        return []
    return [password, unquote(password)] if password else []


class ToolRuntime:
    """Catalog, registry and exposed surface for one profile of one config."""

    # The parts, built by start() (or on a sync caller's first read of one: __getattr__).
    catalog: McpCatalog
    audit: AuditSink
    registry: ToolRegistry
    calls: CallSession
    access: AccessViews
    index: SearchIndex
    surface: RegistrySurface
    sandbox: Sandbox | None
    config_source: ConfigSource
    replicas: PostgresReplicaBoard | None  # each replica's view of its servers (team store)

    def __init__(
        self,
        loaded: LoadedConfig,
        options: RuntimeOptions | None = None,
        *,
        components: RuntimeComponents | None = None,
    ) -> None:
        """Validate the options against ``loaded`` (no I/O: see :meth:`start`)."""
        self.loaded = loaded
        self.options = options or RuntimeOptions()
        self.components = components or RuntimeComponents()
        self._scope: ToolApplyScope | None = None  # the last scope() made
        self.events = self.components.events or EventBus()
        config = loaded.config
        # Configured secrets (server env/header values, the gateway token) and URL
        # credentials never reach a log line, whoever logs it (the SDK logs request URLs).
        redact_logs(
            [
                *(v for server in config.servers.values() for v in server.secrets),
                *([loaded.gateway_token] if loaded.gateway_token else []),
                *_url_password(loaded),
            ]
        )
        profile = config.profile(self.options.profile)
        self.settings: AssistantSettings = profile.to_settings()
        # The window deferral is sized for: --context-window, the profile's, the config's
        # (None: the 200k default). A [models.*] window sizes `pegboard chat` only: the
        # gateway's client runs its own model, not the one configured for chat.
        self.context_window = (
            self.options.context_window or profile.context_window or config.context_window
        )
        if config.meta.tool_exec:
            from pegboard.sandbox.engine import require_monty  # lazy: only with tool_exec

            require_monty()
            if self.options.defer is None and not config.meta.defer:
                # Only the config's own contradiction: a caller that turns deferral off (serve's
                # --no-defer, the CLI's full listings) says so itself if it is the user's choice.
                logger.warning(
                    "[meta] tool_exec is on but [meta] defer = false: tool_exec is offered only "
                    "beside the meta-tools of deferred tools"
                )
        self.selected: frozenset[str] = frozenset()
        self.gate_problems: tuple[str, ...] = ()
        self.plugin_tools: frozenset[str] = frozenset()
        self.collisions: tuple[McpCollision, ...] = ()
        self._build_lock = threading.RLock()
        self._built = False
        self._listed = False
        self._running = False

    def __getattr__(self, name: str) -> Any:
        # Only reached for a part not built yet: build them (once), then answer. The listing
        # (the search index and the surface) is built on its first use: `servers status` reads
        # the catalog and the registry only.
        if name in _PARTS and not self.__dict__.get("_built", True):
            self._build()
            return getattr(self, name)
        if name in _LISTING_PARTS and not self.__dict__.get("_listed", True):
            self._build_listing()
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    async def start(self) -> ToolRuntime:
        """Open the stores, build the parts and prepare the MCP listing a client asks for
        first (off the event loop); idempotent."""
        if not self._built:
            await anyio.to_thread.run_sync(self._build_listed)
        return self

    def _build_listed(self) -> None:
        self._build()
        self.surface.list_tools_json()  # made on first read: here, not on the event loop

    def _build(self) -> None:
        with self._build_lock:
            if self._built:
                return
            self._build_parts()
            self._built = True

    def _build_listing(self) -> None:
        with self._build_lock:
            self._build()
            if self._listed:
                return
            self._build_surface()
            self._listed = True

    def _build_parts(self) -> None:
        loaded, config = self.loaded, self.loaded.config
        counter = default_token_counter()
        if isinstance(counter, BpeTokenCounter):  # deferral's counts, kept across starts
            keep_counts(counter, loaded.data_dir / TOKEN_COUNTS_FILE)
        keep_counts(default_checked(), loaded.data_dir / CHECKED_FILE)  # a re-list checks less
        keep_counts(default_known(), loaded.data_dir / FLAGS_FILE)  # `servers status` too
        given = replace(self.components, events=self.events)
        if given.search_index is None and self.options.build_index_apart:
            given = replace(given, search_index=_default_index(loaded, build_apart=True))
        parts = default_components(loaded, given)
        self.config_source = parts.config
        servers = list(config.servers.values())
        self.catalog = McpCatalog(
            servers,
            parts.store,
            state=parts.state,
            events=self.events,
            stderr_dir=loaded.stderr_dir,
        )
        self.audit = parts.audit
        self.replicas = parts.replicas
        self._made = parts.made
        self.registry = ToolRegistry(events=self.events)
        limits = config.limits
        self.calls = CallSession(
            audit=self._audit_sink(),
            grants=parts.grants,
            pending=parts.pending,
            limits=CallLimits.configured(
                Limits(limits.calls_per_minute, limits.per_tool), parts.rate_limiter
            ),
        )
        # What each principal of pegboard serve may use ([[auth.allow]]; open without rules).
        self.access = AccessViews(AccessPolicy.from_rules(config.auth.allow))
        self._register_plugins()
        self.resync()
        # The sandbox's workers start on the first tool_exec run, not here; stopped on exit.
        self.sandbox = None
        if config.meta.tool_exec:
            from pegboard.sandbox.engine import Sandbox

            self.sandbox = Sandbox()
        self._search_index = parts.search_index

    def _build_surface(self) -> None:
        config = self.loaded.config
        tool_exec = None
        if self.sandbox is not None:
            from pegboard.deferral.tool_exec import ExecSettings  # lazy: only with tool_exec

            tool_exec = ExecSettings(sandbox=self.sandbox)
        defer = self.options.defer if self.options.defer is not None else config.meta.defer
        self.index = self._search_index(self.registry)  # shared by the surface and integrations
        self.surface = RegistrySurface(
            self.registry,
            self.scope,
            context_window=self.context_window,
            defer=defer,
            statuses=self.namespace_statuses,
            session=self.calls,
            index=self.index,
            tool_exec=tool_exec,
            events=self.events,
        )

    def _audit_sink(self) -> AuditSink:
        """The audit sink, plus the one given in the options (if any); each record is also
        published on the event bus (:class:`~pegboard.core.events.CallFinished`), and the
        audit log's pre-call check (``on_failure = "refuse"``) still applies."""
        sinks = [self.audit, *([self.options.audit] if self.options.audit else [])]
        return FanOut(
            sinks,
            then=self._call_finished,
            check=getattr(self.audit, "check", None),
        )

    def _call_finished(self, record: CallRecord) -> None:
        if self.events.subscribers(CallFinished):  # (the admin's metrics; else no event made)
            self.events.publish(CallFinished(record))

    # -- scope -------------------------------------------------------------------------------
    def scope(self) -> ToolApplyScope:
        """The scope of a call or listing now: the profile's settings, the selected MCP tools
        and the context window. Built again only when one of them was replaced (all three
        are immutable, so the same scope object serves until then: two frozen dataclasses
        per call saved)."""
        made = self._scope
        if (
            made is not None
            and made.assistant is self.settings
            and made.mcp_tool_ids is self.selected
            and made.model is not None
            and made.model.context_window == self.context_window
        ):
            return made
        model = ModelInfo(context_window=self.context_window)
        made = ToolApplyScope(assistant=self.settings, mcp_tool_ids=self.selected, model=model)
        self._scope = made
        return made

    def server_allowed(self, server_id: str) -> bool:
        """Whether the profile's MCP mode lets ``server_id`` contribute tools."""
        mode = self.settings.mcp_mode
        if mode == "disabled" or not self.catalog.is_active(server_id):
            return False
        return mode == "auto" or server_id in self.settings.mcp_server_ids

    def namespace_statuses(self) -> dict[str, NamespaceStatus]:
        from pegboard.mcp.status import namespace_statuses  # deferral's, not a read's

        return namespace_statuses(self.catalog.statuses(), self.settings)

    # -- sync --------------------------------------------------------------------------------
    def resync(self) -> None:
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
        if self._listed:  # a surface built later lists the registry as it is then
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

    def _on_tools_changed(self, event: ToolsChanged) -> None:
        logger.info("tools of MCP server %s changed; re-syncing", event.server_id)
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
        source = self.config_source
        seen = source.stamp()
        while True:
            await anyio.sleep(interval)
            current = source.stamp()
            if current == seen:
                continue
            seen = current
            try:
                await self.apply_config(source.load())
            except PegboardError as exc:
                logger.warning("ignoring the changed config: %s", exc)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ToolRuntime]:
        """Run the catalog (pre-warm in the background); on exit every child is stopped
        (upstream servers and the tool_exec sandbox's workers). Inside a runtime that already
        runs (``pegboard serve``, whose admin page refreshes a server) it only yields."""
        if self._running:
            yield self
            return
        await self.start()
        self._running = True
        unsubscribe = self.catalog.events.subscribe(ToolsChanged, self._on_tools_changed)
        try:
            async with self.catalog.running(prewarm=self.options.prewarm):
                yield self
        finally:
            self._running = False
            unsubscribe()
            self._close_stores()
            if self.sandbox is not None:
                with anyio.CancelScope(shield=True):
                    await self.sandbox.aclose()

    async def share_replica_state(self) -> None:
        """Forever (``pegboard serve`` runs it in a task): keep this replica's view of its
        servers in the team store (:mod:`pegboard.mcp.replicas_pg`); returns at once
        without a team store."""
        if self.replicas is None:
            return
        from pegboard.mcp.replicas_pg import ReplicaHeartbeat

        await ReplicaHeartbeat(self.replicas, self.catalog.statuses, self.events).run()

    def close(self) -> None:
        """Close the stores of a runtime that was built but not run (``running`` closes
        them itself on exit); idempotent."""
        if self._built:
            self._close_stores()

    def _close_stores(self) -> None:
        self.catalog.store.close()
        for made in self._made:  # the audit and approval stores default_components made
            if callable(close := getattr(made, "close", None)):
                close()

    async def __aenter__(self) -> ToolRuntime:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()


_PARTS = frozenset(
    {
        "catalog",
        "audit",
        "registry",
        "calls",
        "sandbox",
        "config_source",
        "access",
        "replicas",
    }
)
_LISTING_PARTS = frozenset({"index", "surface"})


@asynccontextmanager
async def open_runtime(
    config: str | os.PathLike[str] | LoadedConfig | None = None,
    profile: str | None = None,
    *,
    components: RuntimeComponents | None = None,
    prewarm: bool = True,
) -> AsyncIterator[ToolRuntime]:
    """The configured MCP servers and built-ins of ``config`` for ``profile``, running
    inside the block (every child server is stopped when it ends)::

        async with open_runtime(profile="work") as runtime:
            output = await runtime.surface.call_tool("mcp__time__now", {}, call_id="1",
                                                     approval=None)
            params = build_agent_params(runtime.registry, runtime.scope(), model)

    ``config``: a config file path, a :func:`~pegboard.config.load_config` result, or None
    for ``$PEGBOARD_CONFIG`` / the default path (a missing default file is the empty
    config; a missing named one is a :class:`~pegboard.errors.UserError`).
    """
    if isinstance(config, LoadedConfig):
        loaded = config
    else:
        loaded = load_config(config)
        if config is not None and not loaded.exists:
            raise UserError(
                f"open_runtime: no config file at {os.fspath(config)}; pass an existing path, "
                "or None for $PEGBOARD_CONFIG or the default config"
            )
    options = RuntimeOptions(profile=profile, prewarm=prewarm)
    runtime = ToolRuntime(loaded, options, components=components)
    async with runtime.running():
        yield runtime

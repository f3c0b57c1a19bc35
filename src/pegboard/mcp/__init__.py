"""MCP servers behind a catalog that never blocks: config, persistent cache, connections, sync.

Public API (everything below is importable from ``pegboard.mcp``)
------------------------------------------------------------------

Server definitions (``config.py``, pydantic at the edge)::

    McpServerConfig(id, name=None, transport=None, command=None, args=[], env={}, cwd=None,
                    url=None, headers={}, enabled=True, disabled_tools=[],
                    force_prompt_tools=[], connect_timeout=10.0, call_timeout=60.0,
                    list_timeout=15.0, first_connect_timeout=120.0)
        ``first_connect_timeout`` replaces ``connect_timeout`` while no tools/list of the
        server ever succeeded (a first start may install it: ``npx -y``, ``uvx``)
        .transport          "stdio" | "http" | "sse": inferred Claude-Desktop style when not
                            given (``command`` -> stdio, ``url`` -> http, ``type: "sse"`` -> sse;
                            ``type``/``transport`` aliases "streamable-http"/"streamableHttp"
                            -> http); ``"disabled": true`` (Claude Code) -> enabled=False
        .display_name       ``name`` or ``id``
        .fingerprint        sha256 hex of canonical JSON of transport/command/args/env/cwd/
                            url/headers (what approval binds trust to; any change -> new value)
        .is_tool_disabled(tool_name) / .is_force_prompt(tool_name)
    parse_mcp_servers(obj) -> list[McpServerConfig]
        accepts ``{"mcpServers": {...}}`` (Claude Desktop, Cursor), ``{"servers": {...}}``
        (VS Code) or the bare ``{id: {...}}`` mapping; raises ``pegboard.errors.ConfigError``
        naming the server and the field (``MCP server 'gh': field 'args': ...``).

Persistent catalog (``store.py``)::

    CatalogStore            Protocol of the shared data: persistent (bool); load_all() ->
                            dict[str, StoredServer]; get(server_id) -> StoredServer | None;
                            put(record: StoredServer) (atomic per-server replace);
                            delete(server_id); pins/set_pins; content/set_content;
                            version(table) -> int and changes(since) -> list[Change] (each
                            shared table, "tools" | "pins" | "content", is versioned, and every
                            write appends to one change feed); close()
    ReplicaStateStore       Protocol of one process's view: load_states(); put_state(StoredState);
                            delete_state(server_id)
    StoredServer            frozen dataclass: server_id, fingerprint, tools (raw MCP tool dicts,
                            exactly as listed, disabled ones included), tool_hashes
                            (name -> sha256 of the definition), fetched_at
    StoredState             frozen dataclass: server_id, fingerprint, status, error, error_at,
                            backoff_until
    SqliteCatalogStore(path)  (``store_sqlite.py``) both protocols in one file: rollback
                            journal (NOT WAL: SQLite 3.40.1 here has the WAL-reset
                            bug), BEGIN IMMEDIATE + busy_timeout, writers of several processes
                            queue on a flock of ``<path>.lock``; a corrupt file is moved to
                            ``<path>.corrupt-<ts>`` and rebuilt with a warning; an unwritable
                            location turns persistence off with a warning (``.persistent`` False).
    MemoryCatalogStore()    both contracts in memory (the default when no store is given).

The catalog (``catalog.py``)::

    McpCatalog(servers: Iterable[McpServerConfig], store: CatalogStore | None = None, *,
               state: ReplicaStateStore | None = None, events: EventBus | None = None,
               prewarm_concurrency=3, empty_backoff=300.0, failure_backoff=30.0,
               refresh_interval=None, max_message_bytes=4 MiB, stderr_log_bytes=64 KiB,
               stderr_dir=None, clock=time.time)
        ``stderr_dir``: each server's stderr of its last start is also kept there, in
        ``stderr_path(stderr_dir, id)`` (``pegboard servers logs``).
        ``clock`` (unix seconds) drives backoffs, fetched_at and status times (tests inject one).
        ``refresh_interval`` (s): a TTL; while running, servers whose list is older are
        re-listed in the background (for servers that never send list_changed).
    async with catalog.running():          # owns the task group of connections and warmers;
        ...                                # on exit every session is closed, every child reaped
    await catalog.start()                  # pre-warm every enabled server in the background
                                           # (bounded concurrency); returns at once
    catalog.list_tools(server_id, include_disabled=False) -> list[ToolDefinition]
        cache-only, never connects, microseconds whatever the server's state; never imports
        the MCP SDK (frozen ``pegboard.core.definition.ToolDefinition``s made from the cached
        raw dicts by ``pegboard.mcp.cached.cached_definition``). Never warmed ->
        [] now plus exactly one background refresh (single-flight). Warmed-empty or failed ->
        no re-probe. Unknown server id -> [].
    catalog.read_tools(server_id) -> list[ToolDefinition] | None
        like list_tools (disabled tools filtered) but None when there is no snapshot (cold):
        the sync uses it to tell "read succeeded" from "nothing known" (no eviction then).
    await catalog.refresh_tools(server_id) -> list[ToolDefinition]
        live: connect, tools/list (all pages), validate each tool (a bad schema skips that tool
        with a warning), write the cache. No tools capability -> [] without tools/list.
        Inactive -> [] and status "disabled". Failure keeps the last-known-good list, records
        error + backoff, and re-raises (ServerUnavailable / McpError).
    await catalog.warm(server_id) -> None        never raises; skips populated/backed-off servers
    await catalog.wait_warm(server_id, wait_timeout) -> None   bounded wait for a cold server
    catalog.status(server_id) -> ServerStatus;  catalog.statuses() -> list[ServerStatus]
    ServerStatus: server_id, name, state ("cold"|"connecting"|"connected"|"failed"|"disabled"),
        error: str | None, at: float | None (time of the state change), tool_count: int,
        fetched_at: float | None (unix time of the cached list); ``.label`` one short line.
        A server whose tools come from the on-disk cache is "cold" until this process has
        talked to it (its tools are served all the same); "failed" is restored from disk.
    catalog.events.subscribe(ToolsChanged, callback) -> unsubscribe   (pegboard.core.events)
        ``callback(ToolsChanged(server_id))`` only when its cached list really changed
        (content compare; never-warmed counts as []), never for an identical re-list.
    catalog.events.subscribe(ServerStatusChanged, callback) -> unsubscribe
        whenever a server's state (or error) changes.
    await catalog.call_tool(server_id, tool_name, arguments, *, call_id=None, call_timeout=None)
        -> pegboard.core.output.ToolOutput  (``is_error`` True for an isError result);
        an inactive server raises pegboard.errors.ServerInactive ("MCP server X is not active
        ...") without any call; a crash, a closed connection or the call timeout raise
        ServerUnavailable (its parent) with the reason; a wrong-shaped result, or structured
        content that fails the tool's cached ``outputSchema`` (checked with a local-only $ref
        registry), raises ToolExecutionError (model-readable); the call is a plain
        ``tools/call`` (the SDK's ``call_tool`` would list tools first on a new session);
        the next call reconnects (a crashed session is also restarted in the background
        with backoff). Cancelling the caller
        cancels the request (the server gets notifications/cancelled).
    await catalog.set_enabled(server_id, enabled)   enabling warms; disabling closes the session
    await catalog.restart(server_id)                close, reconnect, refresh
    await catalog.clear_tools(server_id)            forget the cached list, error and backoff
                                                    (store too); fires tools-changed if non-empty
    catalog.is_active(server_id) -> bool;  catalog.server(server_id) -> McpServerConfig
    catalog.servers() -> list[McpServerConfig]; catalog.stderr_tail(server_id) -> str
    await catalog.session(server_id) -> mcp.ClientSession   the live session (connecting
        first) for requests the catalog does not model (resources, prompts)
    catalog.events.subscribe(ContentChanged, callback) -> unsubscribe
        when a server sends resources/list_changed or prompts/list_changed
    await catalog.supervisor.refresh_content(server_id) -> bool   list its resources,
        templates and prompts into the cache (True: a list changed);
        catalog.cache.content(server_id, kind) -> StoredContent | None  the last listing
    catalog.tool_hashes(server_id) -> dict[str, str]   tool name -> tool_hash(raw definition)
    catalog.store                                    the CatalogStore (close it when done)
    catalog.cache / catalog.supervisor / catalog.events   the three parts the façade calls

Transport guards (``transport.py``; stdio is our own transport, not ``mcp.stdio_client``):
a stdio child gets only ``ENV_ALLOWLIST`` from our environment plus its configured ``env``
(``child_environment``); a message over ``max_message_bytes`` closes the connection with that
reason; stderr drains into a bounded ``StderrLog`` (``catalog.stderr_tail``). A ``tools/list``
response is validated tool by tool (``listing.py``) so one bad tool never hides its siblings.

Resolve and sync (``sync.py``, SPEC section 4)::

    await resolve_assistant_mcp_tool_ids(assistant_settings, catalog, *, wait_timeout=10.0)
        -> list[str]   wire names. mode "disabled" -> []; "manual" -> linked servers only
        (nothing linked -> [] without touching the catalog); "auto" -> every active server;
        cold servers are warmed with a bounded wait; a "failed" server contributes nothing
        (its cached tools stay registered); minus assistant + server disabled tools.
    sync_mcp_tools_to_registry(registry, catalog, selected_tool_ids=None, *, assistant=None)
        -> SyncReport(registered: list[str], evicted: list[str], collisions: list[McpCollision])
        reads only the cache. One ToolEntry per tool: name = mcp_tool_name(...), namespace
        ``mcp:<server_id>``, label ``mcp:<display name>``, source ToolSource(server_id, tool),
        applies = wire name in scope.mcp_tool_ids (None: the assistant's MCP mode decides,
        AssistantSettings.allows_mcp_tool), defer "never" + needs_approval=True for
        force-prompt tools (server config or ``assistant.force_prompt_tools``), else "auto".
        Idempotent; evicts only tools of inactive servers or tools missing from a successful
        read (with a selection: only selected ids); other namespaces untouched; an empty
        selection reads nothing. Different identities sharing one wire name are all excluded
        and reported (log + report); exact duplicates deduped. The entry's execute calls
        catalog.call_tool and returns its ToolOutput; on isError it raises McpToolError (a
        ToolExecutionError whose message is the server's text and ``.output`` the full
        ToolOutput). The registry maps wire name -> ToolSource (``resolve_source``).

Results (``results.py``)::

    call_result_to_output(result: mcp_types.CallToolResult, *, metadata=None) -> ToolOutput
        text, images, audio, embedded/linked resources kept as parts (binary never in text);
        structured content in ``structured`` (and as JSON text when there is no text part).
"""

from typing import TYPE_CHECKING

from pegboard._lazy import lazy_exports

# public name -> submodule; loaded on first use (PEP 562) so that importing one submodule
# (e.g. ``pegboard.mcp.config`` from the config model) does not pull in the catalog and the SDK.
_EXPORTS = {
    "ENV_ALLOWLIST": "spawn",
    "CatalogStore": "store",
    "McpCatalog": "catalog",
    "McpCollision": "sync",
    "McpServerConfig": "config",
    "McpToolError": "pegboard.errors",
    "MemoryCatalogStore": "store",
    "ServerState": "status",
    "ServerStatus": "status",
    "ReplicaStateStore": "store",
    "SqliteCatalogStore": "store_sqlite",
    "StderrLog": "transport",
    "StoredServer": "store",
    "StoredState": "store",
    "SyncReport": "sync",
    "call_result_to_output": "pegboard.mcp.results",
    "child_environment": "spawn",
    "parse_mcp_servers": "config",
    "resolve_assistant_mcp_tool_ids": "sync",
    "sync_mcp_tools_to_registry": "sync",
    "tool_hash": "server_state",
}


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:
    from pegboard.errors import McpToolError
    from pegboard.mcp.catalog import McpCatalog
    from pegboard.mcp.config import McpServerConfig, parse_mcp_servers
    from pegboard.mcp.results import call_result_to_output
    from pegboard.mcp.server_state import tool_hash
    from pegboard.mcp.spawn import ENV_ALLOWLIST, child_environment
    from pegboard.mcp.status import ServerState, ServerStatus
    from pegboard.mcp.store import (
        CatalogStore,
        MemoryCatalogStore,
        ReplicaStateStore,
        StoredServer,
        StoredState,
    )
    from pegboard.mcp.store_sqlite import SqliteCatalogStore
    from pegboard.mcp.sync import (
        McpCollision,
        SyncReport,
        resolve_assistant_mcp_tool_ids,
        sync_mcp_tools_to_registry,
    )
    from pegboard.mcp.transport import StderrLog

__all__ = [
    "ENV_ALLOWLIST",
    "CatalogStore",
    "McpCatalog",
    "McpCollision",
    "McpServerConfig",
    "McpToolError",
    "MemoryCatalogStore",
    "ReplicaStateStore",
    "ServerState",
    "ServerStatus",
    "SqliteCatalogStore",
    "StderrLog",
    "StoredServer",
    "StoredState",
    "SyncReport",
    "call_result_to_output",
    "child_environment",
    "parse_mcp_servers",
    "resolve_assistant_mcp_tool_ids",
    "sync_mcp_tools_to_registry",
    "tool_hash",
]

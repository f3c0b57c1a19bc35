"""The low-level MCP server of ``pegboard serve``, for both protocol eras.

The SDK's low-level :class:`~mcp.server.lowlevel.Server` is used (not ``MCPServer``) because
the tool list and the instructions change while the server runs. One server serves both eras
(the SDK routes each connection, or each HTTP request, by what the client sends):

- **2026-07-28** (modern, sessionless): ``server/discover`` advertises it first; every request
  carries its own version and capabilities in ``_meta``. Approval is asked in input-required
  rounds with a sealed ``requestState`` (:mod:`pegboard.gateway.rounds`); list changes reach a
  client through ``subscriptions/listen``; list results carry cache hints (:data:`LIST_HINT`).
- **handshake era** (2024-11-05 to 2025-11-25): ``initialize``, then
  ``notifications/tools/list_changed`` and pushed elicitation on the connection, as before.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio
import mcp_types
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.caching import CacheHint
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ServerEvent,
    ToolsListChanged,
)
from mcp_types.methods import serialize_server_result
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)

import pegboard
from pegboard.calls.approval import ApprovalPending
from pegboard.calls.fallback import STORE_LOST_LINE
from pegboard.calls.queue import ApprovalQueue, ApprovalQueued
from pegboard.core.access import AccessView, AccessViews
from pegboard.core.definition import wire_json
from pegboard.core.events import McpRequestHandled
from pegboard.core.output import TextPart, ToolOutput
from pegboard.core.principal import Principal
from pegboard.core.tracing import tracing_on
from pegboard.errors import ApprovalRequired, CatalogError
from pegboard.gateway.approval import (
    NO_ELICITATION_MESSAGE,
    REFUSAL_FIX,
    ElicitationApproval,
    client_can_elicit,
    client_name,
    connection_of,
    connection_session_id,
    elicitation_modes,
)
from pegboard.gateway.content import UpstreamContent
from pegboard.gateway.content_guard import Asking
from pegboard.gateway.identity import HTTP_SCOPE, STDIO, principal_of, principal_of_scope
from pegboard.gateway.pages import ApprovalPages
from pegboard.gateway.rounds import (
    GRANT_TTL_S,
    STATE_TTL_S,
    RoundApproval,
    Rounds,
    SecretStore,
    client_of,
    sessionless_id,
    state_boundary,
    store_lost,
)
from pegboard.gateway.surface import ToolSurface
from pegboard.mcp.results import output_to_call_result, plain_wire
from pegboard.mcp.store import MemoryCatalogStore

logger = logging.getLogger("pegboard.gateway")

_NOTIFY = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
MODERN = frozenset(MODERN_PROTOCOL_VERSIONS)
VERSIONS = (*reversed(MODERN_PROTOCOL_VERSIONS), *reversed(HANDSHAKE_PROTOCOL_VERSIONS))
"""What ``server/discover`` advertises, newest first."""
LIST_HINT = CacheHint(ttl_ms=2000, scope="private")
"""Cache hint of every list result (and discover) on the modern era: fresh for 2 s (a change
also reaches listeners at once), and private, since what is listed depends on the profile
served and, behind one gateway, on who asks."""
_HINTED = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")


class Pending:
    """A change flag: set from anywhere on the loop, taken (awaited, then cleared) by one task."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def set(self) -> None:
        self._event.set()

    async def take(self) -> None:
        await self._event.wait()
        self._event = anyio.Event()


async def _announce_each(
    pending: Pending, announce: Callable[[], Awaitable[None]], what: str
) -> None:
    """Forever: after each change, ``announce`` it (a failure is logged, not raised)."""
    while True:
        await pending.take()
        try:
            await announce()
        except Exception:
            logger.exception("could not announce a %s change", what)


class _Bus(InMemorySubscriptionBus):
    """The in-process listen bus, which also tells when a first listener subscribed."""

    def __init__(self) -> None:
        super().__init__()
        self.listening = anyio.Event()

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        unsubscribe = super().subscribe(listener)
        self.listening.set()
        return unsubscribe


_GATE_OPENERS = frozenset({"initialize", "notifications/initialized"})
"""The messages after which the SDK serves a handshake-era connection's requests."""


class ClientHub:
    """The connected clients, so a change can be announced to each of them: handshake-era
    connections by a notification on the connection, modern listeners through the bus."""

    def __init__(self) -> None:
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._by_session: weakref.WeakValueDictionary[str, Connection] = (
            weakref.WeakValueDictionary()
        )
        self.bus = _Bus()

    def opened(self, session: ServerSession) -> None:
        """Record that ``session``'s handshake opened it (:meth:`Gateway._track_clients`): its
        ``initialize`` answered and committed, or a bare ``notifications/initialized`` read.
        The one place a connection is tracked (announcements, the listing) and an HTTP
        session becomes known to :meth:`connection`; a session whose ``initialize`` was
        refused is not, until its gate opens another way."""
        connection = connection_of(session)
        connection.state.setdefault("pegboard.connected_at", time.time())
        self._connections.add(connection)
        if connection.session_id is not None:  # an HTTP session's, set when it is made
            self._by_session[connection.session_id] = connection

    def connection(self, session_id: str) -> Connection | None:
        """The connection of the HTTP session ``session_id`` once :meth:`opened` recorded
        it: its client's initialize params are committed (or its gate opened by a bare
        ``notifications/initialized``), so the SDK would serve any request of it."""
        return self._by_session.get(session_id)

    def connections(self) -> list[dict[str, Any]]:
        """Each connected client: session id, client name and version, protocol version,
        whether it can be asked (elicitation), when it connected; oldest first."""
        found = []
        for connection in list(self._connections):
            params = connection.client_params
            info = params.client_info if params is not None else None
            caps = connection.client_capabilities
            found.append(
                {
                    "session_id": connection.session_id
                    or connection.state.get("pegboard.session_id", ""),
                    "client": f"{info.name} {info.version}" if info is not None else "unnamed",
                    "protocol_version": connection.protocol_version,
                    "can_elicit": caps is not None and caps.elicitation is not None,
                    "connected_at": connection.state.get("pegboard.connected_at", 0.0),
                }
            )
        return sorted(found, key=lambda c: float(c["connected_at"]))

    def __len__(self) -> int:
        return len(self._connections)

    async def announce_tools_changed(self) -> None:
        await self.bus.publish(ToolsListChanged())
        for connection in list(self._connections):
            if connection.initialized.is_set():
                await connection.send_tool_list_changed()

    async def announce_content_changed(self) -> None:
        """An upstream's resources or prompts changed (which of them, it does not say)."""
        await self.bus.publish(ResourcesListChanged())
        await self.bus.publish(PromptsListChanged())
        for connection in list(self._connections):
            if connection.initialized.is_set():
                await connection.send_resource_list_changed()
                await connection.send_prompt_list_changed()


class InputSchemas:
    """A tool's input schema as the caller of the HTTP request being checked lists it (None:
    not listed to them): what the SDK checks a 2026-07-28 call's ``Mcp-Param`` headers
    against, given as its ``get_tool_input_schema`` (without it the SDK lists every tool per
    call to find the one schema). One name -> schema map per access view, until a change."""

    def __init__(
        self, surface: ToolSurface, view_of: Callable[[Principal], AccessView | None]
    ) -> None:
        self._surface = surface
        self._view_of = view_of
        self._maps: dict[tuple[int, ...] | None, dict[str, Any]] = {}

    def __call__(self, name: str) -> dict[str, Any] | None:
        scope = HTTP_SCOPE.get()
        view = self._view_of(principal_of_scope(scope) if scope is not None else STDIO)
        key = view.key if view is not None else None
        schemas = self._maps.get(key)
        if schemas is None:
            listed = self._surface.list_tools_json(view)
            schemas = self._maps[key] = {t["name"]: t.get("inputSchema") for t in listed}
        return schemas.get(name)

    def clear(self) -> None:
        self._maps.clear()


class _GatewayServer(Server[Any]):
    """A Server whose initialize result reads the surface at handshake time."""

    def __init__(self, surface: ToolSurface, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._surface = surface
        # What a handshake's instructions may name (None: everything): over HTTP with access
        # rules the SDK builds them before the caller is known, so they name no tool then.
        self.handshake_view: AccessView | None = None

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        self.instructions = self._surface.instructions(self.handshake_view)
        return super().create_initialization_options(
            notification_options or _NOTIFY,
            experimental_capabilities,
            extensions,
        )


class Gateway:
    """An MCP server over a :class:`ToolSurface`, with change announcements."""

    def __init__(
        self,
        surface: ToolSurface,
        *,
        name: str = "pegboard",
        content: UpstreamContent | None = None,
        store: SecretStore | None = None,
        state_ttl: float = STATE_TTL_S,
        access: AccessViews | None = None,
    ) -> None:
        """``store`` keeps the key that seals approval rounds and their spent nonces (the
        catalog's store; a memory store, private to this process, when None); a round's
        ``requestState`` is good for ``state_ttl`` seconds; ``access`` says what each
        principal may use (``[[auth.allow]]``; None: everything)."""
        self.surface = surface
        self.access = access
        self.content = content
        self.hub = ClientHub()
        self.queue = ApprovalQueue()  # gated calls of clients that cannot be asked
        # Links to the approvals' admin pages (none until an admin UI is known: form only).
        self.pages = ApprovalPages()
        self.rounds = Rounds(store if store is not None else MemoryCatalogStore(), state_ttl)
        self._changed = Pending()
        self._content_changed = Pending()
        self._session: ServerSession | None = None
        # (protocol version, access view key) -> the serialized tools/list result, until the
        # surface changes
        self._listed: dict[tuple[str, tuple[int, ...] | None], bytes] = {}
        self.input_schemas = InputSchemas(surface, self.view_of)
        self.snapshot_due = Pending()
        self.client_seen = anyio.Event()  # the first request of a client reached the SDK
        # Tasks the HTTP transport runs beside the gateway (the relay between replicas).
        self.background: list[Callable[[], Coroutine[Any, Any, None]]] = []
        self.server = _GatewayServer(
            surface,
            name=name,
            version=pegboard.__version__,
            title="pegboard",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self.hub.bus),
            cache_hints=dict.fromkeys(_HINTED, LIST_HINT),
            get_tool_input_schema=self.input_schemas,
            **(content.handlers(self._asking, self.caller) if content is not None else {}),
        )
        self.server.add_request_handler("server/discover", mcp_types.RequestParams, self._discover)
        self.spans = tracing_on()  # each request's span, from the SDK's middleware
        if not self.spans:  # the SDK's span middleware would only cost CPU
            self.server.middleware = [
                m for m in self.server.middleware if not isinstance(m, OpenTelemetryMiddleware)
            ]
        self.server.middleware.append(self._track_clients)
        self.server.middleware.append(state_boundary(self.rounds.store, state_ttl))
        self._unsubscribe = surface.subscribe(self._on_surface_changed)

    async def _track_clients(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        self.seen(ctx.session, ctx.method, ctx.protocol_version)
        if ctx.method not in _GATE_OPENERS or ctx.protocol_version in MODERN:
            return await call_next(ctx)
        result = await call_next(ctx)  # raises when the SDK refuses it: nothing is recorded
        # The SDK sets ``initialized`` in the chain (unless it drops a malformed one), and
        # commits ``initialize``'s params right after the chain returns, with no await
        # between (its span middleware, the only one outside this, ends synchronously): no
        # request of the session can find this record before the SDK's own.
        if ctx.method == "initialize" or connection_of(ctx.session).initialized.is_set():
            self.hub.opened(ctx.session)
        return result

    def seen(self, session: ServerSession, method: str, version: str) -> None:
        """A request of ``session``'s client (the server's middleware, and the HTTP fast path's
        calls, which skip it): counted in the metrics, the session kept as the latest (stdio's
        one). Which clients are connected is :meth:`ClientHub.opened`'s record."""
        events = getattr(self.surface, "events", None)
        if events is not None and events.subscribers(McpRequestHandled):
            era = "modern" if version in MODERN else "handshake"
            events.publish(McpRequestHandled(method, era))
        if method != "server/discover" and version not in MODERN:
            self._session = session
            if not self.client_seen.is_set():
                self.client_seen.set()

    async def _discover(
        self, ctx: ServerRequestContext[Any], params: mcp_types.RequestParams | None
    ) -> mcp_types.DiscoverResult:
        return self._discover_result(ctx.protocol_version, self.caller(ctx)[1])

    def _discover_result(
        self, version: str, view: AccessView | None = None
    ) -> mcp_types.DiscoverResult:
        return mcp_types.DiscoverResult(
            supported_versions=list(VERSIONS),
            capabilities=self._capabilities(version),
            instructions=self.surface.instructions(view),
            ttl_ms=LIST_HINT.ttl_ms,
            cache_scope=LIST_HINT.scope,
        )

    def _capabilities(self, version: str) -> mcp_types.ServerCapabilities:
        caps = self.server.get_capabilities(_NOTIFY, protocol_version=version)
        if caps.resources is not None and version in MODERN:
            # listen carries list changes only: no per-resource updates to subscribe to
            caps = caps.model_copy(
                update={"resources": caps.resources.model_copy(update={"subscribe": None})}
            )
        return caps

    def nameless_view(self) -> AccessView | None:
        """A view that names no tool or server, when access rules govern HTTP clients (for
        what is built before the caller is known: the handshake's instructions); else None."""
        if self.access is None or not self.access.policy.rules:
            return None
        return AccessView((), ())

    def view_of(self, principal: Principal) -> AccessView | None:
        """What ``principal`` may use (None: everything). The stdio client is the user who
        started ``pegboard serve`` with their own config: the rules govern HTTP clients."""
        if self.access is None or principal is STDIO:  # the object, not a look-alike subject
            return None
        return self.access.of(principal)

    def caller(self, ctx: ServerRequestContext[Any, Any]) -> tuple[Principal, AccessView | None]:
        """Who sent this request (:func:`~pegboard.gateway.identity.principal_of`) and what
        they may use."""
        principal = principal_of(ctx)
        return principal, self.view_of(principal)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        _, view = self.caller(ctx)
        return mcp_types.ListToolsResult(tools=list(self.surface.list_tools(view)))

    def tools_list_json(self, version: str, principal: Principal = STDIO) -> bytes:
        """The ``tools/list`` result for ``version`` as ``principal`` sees it, as JSON,
        serialized once per change of the surface and access class (the SDK would re-validate
        and re-dump every tool on every request)."""
        view = self.view_of(principal)
        key = (version, view.key if view is not None else None)
        cached = self._listed.get(key)
        if cached is None:
            result = self._tools_list_result(version, view)
            cached = json.dumps(result, separators=(",", ":")).encode()
            self._listed[key] = cached
        return cached

    def _tools_list_result(self, version: str, view: AccessView | None) -> dict[str, Any]:
        # The SDK's per-version sieve drops fields the version does not know (once per change).
        result: dict[str, Any] = {"tools": self.surface.list_tools_json(view)}
        return self._shaped("tools/list", version, result)

    def _shaped(self, method: str, version: str, result: dict[str, Any]) -> dict[str, Any]:
        """``result`` as the SDK's runner shapes it for ``version`` (cache hint, sieve, and on
        the modern era ``resultType`` and the ``serverInfo`` stamp), for answers written
        without the SDK's dispatcher."""
        if version in MODERN:
            hint = {"ttlMs": LIST_HINT.ttl_ms, "cacheScope": LIST_HINT.scope}
            result = {"resultType": "complete", **hint, **result}
        shaped = serialize_server_result(method, version, result)
        if version in MODERN:
            shaped["_meta"] = {mcp_types.SERVER_INFO_META_KEY: self.server.server_info_stamp}
        return shaped

    def ready_snapshot(self) -> dict[str, Any]:
        """What the early reader of the next start answers with (:mod:`pegboard.gateway.ready`)."""
        opts = self.server.create_initialization_options()
        result = mcp_types.InitializeResult(
            protocol_version=LATEST_HANDSHAKE_VERSION,
            capabilities=opts.capabilities,
            server_info=mcp_types.Implementation(
                name=opts.server_name, title=opts.title, version=opts.server_version
            ),
            instructions=opts.instructions,
        )
        init = serialize_server_result(
            "initialize",
            LATEST_HANDSHAKE_VERSION,
            result.model_dump(by_alias=True, mode="json", exclude_none=True),
        )
        init.pop("protocolVersion", None)
        versions = list(HANDSHAKE_PROTOCOL_VERSIONS)
        modern = list(MODERN_PROTOCOL_VERSIONS)
        tools = {v: json.loads(self.tools_list_json(v)) for v in (*versions, *modern)}
        discover = {
            v: self._shaped(
                "server/discover",
                v,
                self._discover_result(v).model_dump(by_alias=True, mode="json", exclude_none=True),
            )
            for v in modern
        }
        from pegboard.gateway.search_snapshot import search_section

        snapshot = {
            "versions": versions,
            "init": init,
            "tools": tools,
            "modern": modern,
            "discover": discover,
        }
        search = search_section(self)
        return snapshot if search is None else snapshot | {"search": search}

    @property
    def stdio_session(self) -> ServerSession | None:
        """The session of the client on stdio (the latest to send a request; stdio has one)."""
        return self._session

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams
    ) -> CallResult | mcp_types.InputRequiredResult:
        if ctx.protocol_version in MODERN:
            return await self.call_modern(ctx, params)
        args = params.arguments or {}
        principal = principal_of(ctx)
        return await self.call(ctx.session, ctx.request_id, params.name, args, principal)

    def _asking(
        self, ctx: ServerRequestContext[Any], params: mcp_types.InputResponseRequestParams
    ) -> Asking | None:
        """How the client of a resource read or prompt get is asked: in rounds when modern."""
        if ctx.protocol_version not in MODERN:
            return None
        answer = self.rounds.answer(params)  # a replayed state is refused here
        principal, client = principal_of(ctx), client_of(ctx)
        return Asking(
            RoundApproval(answer) if client_can_elicit(ctx.session) else None,
            principal,
            sessionless_id(principal, client),
            GRANT_TTL_S,
            lambda request, bound, asked: self.rounds.ask(request, bound, approval_id=asked),
        )

    async def call_modern(
        self, ctx: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams
    ) -> CallResult | mcp_types.InputRequiredResult:
        """One ``tools/call`` of a 2026-07-28 client: a gated call is asked in an
        input-required round (:mod:`pegboard.gateway.rounds`), answered on the retry."""
        name, arguments = params.name, params.arguments or {}
        form, url = elicitation_modes(ctx.session)
        try:
            answer = self.rounds.answer(params)  # a replayed state is refused here
        except CatalogError:  # its once-only use cannot be checked (pegboard.calls.fallback)
            return _error(STORE_LOST_LINE)
        principal, client = principal_of(ctx), client_of(ctx)
        rounds = RoundApproval(answer, self.pages.wait)
        try:
            output = await self.surface.call_tool(
                name,
                arguments,
                call_id=f"mcp-{ctx.request_id}",
                approval=rounds if form or (url and self.pages.available()) else self.queue,
                session_id=sessionless_id(principal, client),
                client=client,
                principal=principal,
                grant_ttl=GRANT_TTL_S,
                access=self.view_of(principal),
            )
        except ApprovalPending as pending:
            if store_lost(self.rounds.store):  # its answer could not be checked: say so now
                return _error(STORE_LOST_LINE)
            asked = pending.approval_id
            page = self.pages.page_of(asked) if url and asked else None
            if page is None and not form:  # only URLs, and the page is gone meanwhile
                return _error(_refusal(self.surface, pending.request.tool_name))
            return self.rounds.ask(
                pending.request,
                approval_id=asked,
                page=page,
                form=form,
                waiting=page is not None and rounds.waits_for_page(pending.request),
            )
        except ApprovalQueued as queued:
            return _error(_queued(self.surface, queued))
        except ApprovalRequired as exc:
            return _error(_refusal(self.surface, exc.tool_name or name))
        return call_result(output)

    async def call(
        self,
        session: ServerSession,
        request_id: mcp_types.RequestId | None,
        name: str,
        arguments: dict[str, Any],
        principal: Principal = STDIO,
    ) -> CallResult:
        """One ``tools/call`` of ``session``'s client (``principal``; stdio's by default), as
        the MCP result it gets (:func:`call_result`)."""
        answer = await self.call_answer(session, request_id, name, arguments, principal)
        return call_result(answer) if isinstance(answer, ToolOutput) else answer

    async def call_answer(
        self,
        session: ServerSession,
        request_id: mcp_types.RequestId | None,
        name: str,
        arguments: dict[str, Any],
        principal: Principal = STDIO,
    ) -> ToolOutput | mcp_types.CallToolResult:
        """What :meth:`call` answers, a tool's output still as the tool gave it (the stdio
        fast path lays it out itself: :func:`answer_line`); a refusal as the MCP result."""
        form, url = elicitation_modes(session)
        pages = self.pages.page_of if url and self.pages.available() else None
        approval = ElicitationApproval(session, request_id, page=pages) if form else self.queue
        try:
            output = await self.surface.call_tool(
                name,
                arguments,
                call_id=f"mcp-{request_id}",
                approval=approval,
                session_id=connection_session_id(session),
                client=client_name(session),
                principal=principal,
                access=self.view_of(principal),
            )
        except ApprovalQueued as queued:  # the client cannot be asked: a person will be
            page = pages(queued.approval_id) if pages is not None else None
            if page is not None:  # a client that opens URLs: the spec's error path
                raise self.pages.required(
                    session, queued, page, _queued(self.surface, queued)
                ) from None
            return _error(_queued(self.surface, queued))
        except ApprovalRequired as exc:
            # Only reached without a handler: the client cannot be asked.
            if not form:
                return _error(_refusal(self.surface, exc.tool_name or name))
            return _error(str(exc))
        finally:
            if isinstance(approval, ElicitationApproval):
                await self.pages.complete(session, approval.opened, request_id)
        return output

    def _on_surface_changed(self) -> None:
        self._listed.clear()
        self.input_schemas.clear()
        self._changed.set()
        self.snapshot_due.set()

    async def announce_when_initialized(self) -> None:
        """Announce a change once the stdio client's session is initialized (its list came
        from a stale snapshot before the SDK's session knew the client)."""
        await self.client_seen.wait()
        assert self._session is not None
        await connection_of(self._session).initialized.wait()
        self._on_surface_changed()

    async def announce_when_listening(self) -> None:
        """Announce a change once a modern client listens (its list came from a stale
        snapshot before the full server ran)."""
        await self.hub.bus.listening.wait()
        self._on_surface_changed()

    async def announce_changes(self) -> None:
        """Forever: tell every client when the surface, or an upstream's resources or
        prompts, changed (run it in a task group)."""
        async with anyio.create_task_group() as tg:
            content = self.hub.announce_content_changed
            tg.start_soon(_announce_each, self._content_changed, content, "resource/prompt list")
            tg.start_soon(self.pages.complete_when_decided)
            await _announce_each(self._changed, self.hub.announce_tools_changed, "tool-list")

    def content_changed(self) -> None:
        """An upstream said its resources or prompts changed (a catalog listener)."""
        self._content_changed.set()

    def close(self) -> None:
        self._unsubscribe()


CallResult = mcp_types.CallToolResult | dict[str, Any]
"""A ``tools/call`` result as the gateway answers it: the SDK's model, or its dump made
without the model (:func:`~pegboard.mcp.results.plain_wire`); the SDK's runner takes both."""


def call_result(output: ToolOutput) -> CallResult:
    """``output`` as the client gets it: the dump of a plain output (text, a structured
    object) written directly, any other through the SDK's models."""
    wire = plain_wire(output)
    return wire if wire is not None else output_to_call_result(output)


def call_response(request_id: mcp_types.RequestId, version: str, result: CallResult) -> bytes:
    """The JSON-RPC response line to a ``tools/call`` answered without the SDK's dispatcher:
    ``result`` (what :meth:`Gateway.call` returned) shaped for ``version`` by the SDK's own
    serializer, the envelope written directly; the same line the SDK's writer makes. A plain
    result (:func:`~pegboard.mcp.results.plain_wire`'s dict) is laid out as that serializer
    lays out plain results for ``version`` (:func:`_plain_layout`), without running it."""
    body = _plain_body(version, result) if isinstance(result, dict) else None
    if body is None:
        if not isinstance(result, dict):
            result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        payload = serialize_server_result("tools/call", version, result)
        try:
            body = wire_json(payload)
        except ValueError:  # NaN or infinity: pydantic's encoder writes them as null
            message = mcp_types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=payload)
            return message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
    return _response_line(request_id, body)


def answer_line(
    request_id: mcp_types.RequestId, version: str, answer: ToolOutput | CallResult
) -> bytes:
    """:func:`call_response` of what :meth:`Gateway.call_answer` gave: a plain output (text
    parts, a structured object) laid out for ``version`` at once, without the result dict
    :func:`call_result` would make of it first; the same line."""
    if isinstance(answer, ToolOutput):
        texts = []
        for part in answer.parts:
            if type(part) is not TextPart:
                break
            texts.append(part.text)
        else:  # the parts plain_wire would give, content as its texts
            parts = {"content": texts, "isError": answer.is_error, "resultType": "complete"}
            if isinstance(answer.structured, dict):
                parts["structuredContent"] = answer.structured
            body = _laid_out(version, parts)
            if body is not None:
                return _response_line(request_id, body)
        answer = call_result(answer)
    return call_response(request_id, version, answer)


def _response_line(request_id: mcp_types.RequestId, body: str) -> bytes:
    # an integer id as JSON writes it (its repr), without an encoder made for it
    head = str(request_id) if type(request_id) is int else wire_json(request_id)
    return f'{{"jsonrpc":"2.0","id":{head},"result":{body}}}\n'.encode()


_PLAIN_PROBE = {
    "content": [{"type": "text", "text": "t"}],
    "structuredContent": {"k": [1, 1.5, None, True, "s", {"n": []}]},
    "isError": True,
    "resultType": "complete",
}


@functools.cache
def _plain_layout(version: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """How the SDK's serializer for ``version`` shapes a plain result: the top-level keys it
    keeps, in its order, and a text block's keys, in order (its model's field order). Found
    once per version by serializing a probe that has every part a plain result can have;
    None if it changed any value or added a key (then plain results go through it too)."""
    shaped = serialize_server_result("tools/call", version, copy.deepcopy(_PLAIN_PROBE))
    same = {k: _PLAIN_PROBE[k] for k in shaped if k in _PLAIN_PROBE}
    if json.dumps(shaped, sort_keys=True) != json.dumps(same, sort_keys=True):
        return None
    return tuple(shaped), tuple(shaped["content"][0])


def _plain_body(version: str, result: dict[str, Any]) -> str | None:
    """The result JSON of a plain result as the serializer for ``version`` writes it, or
    None (no layout for the version; a value JSON cannot carry as it is: not finite, not
    JSON): then the serializer itself decides."""
    texts = []
    for block in result.get("content", ()):
        if block.get("type") != "text":
            return None
        texts.append(block.get("text"))
    return _laid_out(version, {**result, "content": texts})


def _laid_out(version: str, parts: dict[str, Any]) -> str | None:
    """A plain result's JSON as the serializer for ``version`` lays it out
    (:func:`_plain_layout`), from its top-level ``parts`` with ``content`` as the text of
    each block; None when the serializer must decide (no layout; what it would coerce or
    refuse)."""
    layout = _plain_layout(version)
    if layout is None:
        return None
    keys, block_keys = layout
    texts, structured = parts.get("content", ()), parts.get("structuredContent", {})
    if (
        type(parts.get("isError", False)) is not bool
        or not isinstance(structured, dict)
        or not all(type(key) is str for key in structured)
        or not all(isinstance(text, str) for text in texts)
    ):
        return None  # what the serializer would coerce or refuse
    payload = {k: parts[k] for k in keys if k in parts}
    payload["content"] = [
        {k: text if k == "text" else "text" for k in block_keys} for text in texts
    ]
    try:
        return wire_json(payload)
    except (ValueError, TypeError):
        return None


def _error(message: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=message)], is_error=True
    )


def _queued(surface: ToolSurface, queued: ApprovalQueued) -> str:
    """Where a queued call waits, and how to let such calls run unasked."""
    fix = REFUSAL_FIX[surface.gate_reason(queued.tool_name or "")]
    return f"{queued} To let it run unasked, {fix}."


def _refusal(surface: ToolSurface, gated: str) -> str:
    """Why a gated call was refused to a client that cannot be asked, and the fix."""
    fix = REFUSAL_FIX[surface.gate_reason(gated)]
    return NO_ELICITATION_MESSAGE.format(name=gated, fix=fix)

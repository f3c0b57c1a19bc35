"""The low-level MCP server of ``pegboard serve``.

The SDK's low-level :class:`~mcp.server.lowlevel.Server` is used (not ``MCPServer``) because
the tool list and the instructions change while the server runs. The gateway speaks the
handshake protocol era: its ``server/discover`` advertises only handshake versions, so clients
fall back to ``initialize``, where ``notifications/tools/list_changed`` and elicitation reach
them on the connection (the 2026 era would need ``subscriptions/listen`` for both).
"""

from __future__ import annotations

import logging
import uuid
import weakref
from typing import Any

import anyio
import mcp_types
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from opentelemetry import trace

import pegboard
from pegboard.calls.approval import ApprovalGrants
from pegboard.errors import ApprovalRequired
from pegboard.gateway.approval import NO_ELICITATION_MESSAGE, ElicitationApproval, client_can_elicit
from pegboard.gateway.results import output_to_call_result
from pegboard.gateway.surface import ToolSurface

logger = logging.getLogger("pegboard.gateway")


def connection_of(session: ServerSession) -> Connection:
    # ServerRequestContext does not expose the connection yet (SDK TODO L54); the session
    # holds it, and list_changed must go on the connection's standalone channel.
    connection: Connection = session._connection
    return connection


class ClientHub:
    """The connected clients, so a change can be announced to each of them."""

    def __init__(self) -> None:
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()

    def add(self, session: ServerSession) -> None:
        self._connections.add(connection_of(session))

    def __len__(self) -> int:
        return len(self._connections)

    async def announce_tools_changed(self) -> None:
        for connection in list(self._connections):
            if connection.initialized.is_set():
                await connection.send_tool_list_changed()


class _GatewayServer(Server[Any]):
    """A Server whose initialize result reads the surface at handshake time."""

    def __init__(self, surface: ToolSurface, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._surface = surface

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        self.instructions = self._surface.instructions()
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class Gateway:
    """An MCP server over a :class:`ToolSurface`, with change announcements."""

    def __init__(self, surface: ToolSurface, *, name: str = "pegboard") -> None:
        self.surface = surface
        self.hub = ClientHub()
        self._changed = anyio.Event()
        self._session: ServerSession | None = None
        self.server = _GatewayServer(
            surface,
            name=name,
            version=pegboard.__version__,
            title="pegboard",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.server.add_request_handler("server/discover", mcp_types.RequestParams, self._discover)
        if not _tracing_configured():  # the SDK's span middleware would only cost CPU
            self.server.middleware = [
                m for m in self.server.middleware if not isinstance(m, OpenTelemetryMiddleware)
            ]
        self.server.middleware.append(self._track_clients)
        self._unsubscribe = surface.subscribe(self._on_surface_changed)

    async def _track_clients(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method not in ("initialize", "server/discover"):
            self.hub.add(ctx.session)
            self._session = ctx.session
        return await call_next(ctx)

    async def _discover(
        self, ctx: ServerRequestContext[Any], params: mcp_types.RequestParams | None
    ) -> mcp_types.DiscoverResult:
        return mcp_types.DiscoverResult(
            supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
            capabilities=self.server.get_capabilities(NotificationOptions(tools_changed=True)),
            instructions=self.surface.instructions(),
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=list(self.surface.list_tools()))

    @property
    def stdio_session(self) -> ServerSession | None:
        """The session of the client on stdio (the latest to send a request; stdio has one)."""
        return self._session

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        return await self.call(ctx.session, ctx.request_id, params.name, params.arguments or {})

    async def call(
        self,
        session: ServerSession,
        request_id: mcp_types.RequestId | None,
        name: str,
        arguments: dict[str, Any],
    ) -> mcp_types.CallToolResult:
        """One ``tools/call`` of ``session``'s client, as the MCP result it gets."""
        can_ask = client_can_elicit(session)
        approval = ElicitationApproval(session, request_id) if can_ask else None
        # "Allow for this session" means this client connection, not every client.
        state = connection_of(session).state
        grants = state.setdefault("pegboard.grants", ApprovalGrants())
        # One audit session per client connection, like the grants.
        session_id = state.setdefault("pegboard.session_id", uuid.uuid4().hex)
        try:
            output = await self.surface.call_tool(
                name,
                arguments,
                call_id=f"mcp-{request_id}",
                approval=approval,
                grants=grants,
                session_id=session_id,
            )
        except ApprovalRequired as exc:
            # Only reached without a handler: the client cannot be asked.
            message = NO_ELICITATION_MESSAGE.format(name=exc.tool_name or name)
            if not can_ask:
                return _error(message)
            return _error(str(exc))
        return output_to_call_result(output)

    def _on_surface_changed(self) -> None:
        self._changed.set()

    async def announce_changes(self) -> None:
        """Forever: tell every client when the surface changed (run it in a task group)."""
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            try:
                await self.hub.announce_tools_changed()
            except Exception:
                logger.exception("could not announce a tool-list change")

    def close(self) -> None:
        self._unsubscribe()


def _tracing_configured() -> bool:
    """Whether an OpenTelemetry tracer provider is installed (else spans are no-ops)."""
    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


def _error(message: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=message)], is_error=True
    )

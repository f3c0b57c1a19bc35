"""A fast path for plain ``tools/call``, ``tools/list`` and ``ping`` POSTs over streamable HTTP.

The SDK answers every POSTed request through a JSON-RPC dispatcher (model validation, a task
and memory streams per request, a message router) and an SSE response (its own task group,
a data sender, a ping task), which costs more CPU than the call it carries. For the plain
case this module answers the request in the request's own task and writes one JSON
response. A handshake-era ``tools/call`` runs :meth:`Gateway.call` directly
(:meth:`HttpFastPath._answer`: the session the runner builds, the client counted and tracked by
:meth:`Gateway.seen`, the answer shaped by :func:`call_response`, as on stdio); the rest
(``tools/list``, ``ping``, the 2026-07-28 era, any call while tracing is on) run the same
:class:`~mcp.server.runner.ServerRunner` kernel the dispatcher runs (the server's middleware:
the tracing span, the gateway's request counter and client tracking, the request-state
boundary; then the handler and the per-version result shaping). An established session's
POST reaches its transport past Starlette and the session managers
(:class:`~pegboard.gateway.sessions.EstablishedPosts`).

Taken, after every check the SDK route makes (the bearer token, OAuth identity, header shape,
request id and body size checks in front of the SDK app all run first; then the SDK's own
Host/Origin, Content-Type, Accept, session id and, on the modern era, envelope and
``Mcp-Param`` checks, called here as predicates): a POST of one JSON object (no batch) with a
string or integer ``id`` whose method is ``tools/call`` (``name`` and ``arguments`` only),
``tools/list`` (no cursor) or ``ping``, and

- handshake era: on a session (``Mcp-Session-Id``) the gateway recorded as opened
  (:meth:`~pegboard.gateway.server.ClientHub.opened`: its ``initialize`` committed), with
  no ``_meta`` but a W3C trace context (``traceparent``, ``tracestate``: what an SDK client
  adds when it traces itself); a call only from a client that cannot elicit (an eliciting
  client may need an approval round on the response stream, which the SDK carries);
- 2026-07-28: a complete envelope in ``_meta`` (version, capabilities, optional client info,
  a trace context, nothing else: no progress token), no ``inputResponses`` or
  ``requestState`` (an approval round's retry); a call only from a client that declares no
  elicitation.

Anything else (a check that fails, GET, DELETE, notifications, answers, batches,
``subscriptions/listen``, a request the SDK would refuse) goes to the SDK unchanged, which
refuses or answers it as before. A reply that is not ready within
:data:`KEEPALIVE_S` is sent as an event stream with keep-alive comments, as the SDK's
responses are, so a proxy's idle timeout does not cut a long call. A handshake-era client's
``notifications/cancelled`` for a fast request cancels it (answered ``Request cancelled``,
as the SDK's transport answers); a 2026-07-28 client cancels by closing the connection.
``PEGBOARD_NO_FAST_CALLS=1`` turns this off with the stdio fast path.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server._streamable_http_modern import (
    _mcp_param_rejection,
    _SingleExchangeDispatchContext,
    _to_jsonrpc_response,
)
from mcp.server.connection import Connection
from mcp.server.runner import ServerRunner, _extract_meta, serve_one
from mcp.server.session import ServerSession
from mcp.server.streamable_http import (
    MCP_SESSION_ID_HEADER,
    REQUEST_CANCELLED,
    StreamableHTTPServerTransport,
    check_accept_headers,
)
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
)
from starlette.requests import Request

from pegboard.gateway.identity import principal_of_scope
from pegboard.gateway.server import call_response

if TYPE_CHECKING:
    from starlette.types import Message, Receive, Scope, Send

    from pegboard.gateway.server import Gateway

logger = logging.getLogger("pegboard.gateway")

BODY_KEY = "pegboard.body"
"""Where :class:`~pegboard.gateway.sessions.EstablishedPosts` leaves the body it read in the
scope (the same bytes its replayed ``receive`` gives the SDK), so the fast path need not read
it again."""
CHECKED_KEY = "pegboard.checked"
"""Where :class:`~pegboard.gateway.sessions.EstablishedPosts` names, in the scope, the
transport it checked a POST for (everything the skipped layers and the transport's own
header checks would have: :class:`FastTransport` does not check it again)."""
KEEPALIVE_S = 15.0
"""A reply not ready by then goes out as an event stream, with a comment line this often."""
_METHODS = frozenset({"tools/call", "tools/list", "ping"})
_CALL_PARAMS = frozenset({"name", "arguments"})
_ENVELOPE = frozenset(
    {PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY}
)
_TRACE = frozenset({"traceparent", "tracestate"})  # W3C trace context (the span's parent)
_JSON = (b"content-type", b"application/json")
_SESSION_HEADER = MCP_SESSION_ID_HEADER.lower().encode()
_SSE = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]


def plain_request(message: Any, modern: bool) -> bool:
    """Whether a decoded body is a request this path takes (see the module docstring)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return False
    request_id, method, params = message.get("id"), message.get("method"), message.get("params")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return False
    if method not in _METHODS or set(message) - {"jsonrpc", "id", "method", "params"}:
        return False
    if params is None:  # a modern request carries its envelope in params; a call its name
        return not modern and method != "tools/call"
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    if modern:
        if not isinstance(meta, dict) or set(meta) - _ENVELOPE - _TRACE:
            return False
    elif meta is not None and (not isinstance(meta, dict) or set(meta) - _TRACE):
        return False
    given = set(params) - {"_meta"}
    if method != "tools/call":
        return not given
    arguments = params.get("arguments")
    return (
        given <= _CALL_PARAMS
        and isinstance(params.get("name"), str)
        and (arguments is None or isinstance(arguments, dict))
    )


_VERDICTS: dict[tuple[bytes | None, ...], bool] = {}
_VERDICTS_KEPT = 64
_VERDICT_HEADERS = (b"accept", b"content-type", b"host", b"origin")


def _verdict_key(
    security: TransportSecurityMiddleware | None, headers: Mapping[bytes, bytes]
) -> tuple[bytes | None, ...]:
    return (*(headers.get(name) for name in _VERDICT_HEADERS), b"+" if security else b"")


def headers_known(
    security: TransportSecurityMiddleware | None, headers: Mapping[bytes, bytes]
) -> bool | None:
    """:func:`headers_admitted`'s verdict if it is kept, without a coroutine; None: ask it."""
    return _VERDICTS.get(_verdict_key(security, headers))


async def headers_admitted(
    transport: FastTransport,
    security: TransportSecurityMiddleware | None,
    headers: Mapping[bytes, bytes],
) -> bool:
    """Whether the SDK's transport takes a handshake-era POST with these headers (each given
    once, or absent) past its header checks: with ``security``, its Host/Origin allow-list
    and Content-Type check (``validate_request``); and its Accept (both types needed:
    :func:`check_accept_headers`) and Content-Type checks (its own). These read only the four
    header values, and a client sends the same ones with every request, so the verdict is
    kept per four values (the first :data:`_VERDICTS_KEPT` seen)."""
    key = _verdict_key(security, headers)
    admitted = _VERDICTS.get(key)
    if admitted is None:
        given = [(name, headers[name]) for name in _VERDICT_HEADERS if name in headers]
        request = Request({"type": "http", "method": "POST", "headers": given})
        has_json, has_sse = check_accept_headers(request)
        admitted = (
            has_json
            and has_sse
            and transport._check_content_type(request)
            and (security is None or await security.validate_request(request, True) is None)
        )
        if len(_VERDICTS) < _VERDICTS_KEPT:
            _VERDICTS[key] = admitted
    return admitted


def _can_elicit(capabilities: Any) -> bool:
    if isinstance(capabilities, dict):
        return capabilities.get("elicitation") is not None
    return capabilities is not None and capabilities.elicitation is not None


def replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the body, already read, given back first (then ``receive``'s own
    messages: a disconnect the SDK may wait for)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _dispatch_context(request: Request, request_id: Any) -> _SingleExchangeDispatchContext:
    # No back channel (a JSON reply has no room for a server request) and no sink: a
    # request-scoped notification has no wire here, as in the SDK's JSON response mode.
    return _SingleExchangeDispatchContext(
        transport=TransportContext(
            kind="streamable-http", can_send_request=False, headers=request.headers
        ),
        request_id=request_id,
        message_metadata=ServerMessageMetadata(request_context=request),
    )


class _CallContext:
    """The dispatch context of a fast ``tools/call`` (:meth:`HttpFastPath._answer`): what the
    SDK's :class:`_SingleExchangeDispatchContext` is without a sink (no back channel, no wire
    for request-scoped notifications or progress), but its ``cancel_requested`` event made
    only if asked for (nothing on this route asks: a client's cancel is :class:`_Running`'s;
    making an anyio ``Event`` looks the backend up, ~2% of a fast call)."""

    __slots__ = ("_cancel", "message_metadata", "request_id", "transport")
    can_send_request = False
    progress_token = None

    def __init__(self, request: Request, request_id: int | str) -> None:
        self.transport = TransportContext(
            kind="streamable-http", can_send_request=False, headers=request.headers
        )
        self.request_id = request_id
        self.message_metadata = ServerMessageMetadata(request_context=request)
        self._cancel: anyio.Event | None = None

    @property
    def cancel_requested(self) -> anyio.Event:
        if self._cancel is None:
            self._cancel = anyio.Event()
        return self._cancel

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        return None  # no sink: as the SDK's context without one

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        return None  # no progress token on this route (plain_request refuses any _meta)


def _event(body: bytes) -> bytes:
    return b"event: message\r\ndata: " + body + b"\r\n\r\n"


async def _reply(
    send: Send,
    answer: Callable[[], Awaitable[tuple[int, bytes]]],
    headers: list[tuple[bytes, bytes]],
    receive: Receive,
) -> None:
    """Send ``answer()``'s (status, JSON body): as JSON when ready within :data:`KEEPALIVE_S`,
    else as an event stream with keep-alive comments (:class:`_KeepAlive`); the client
    closing the connection (read from ``receive``) cancels the answer (the 2026-07-28 way
    to cancel a request). One watching task, which ends by itself when the answer is sent
    (ASGI's ``receive`` then says ``http.disconnect``)."""
    keeper = _KeepAlive(send, headers)
    try:
        async with anyio.create_task_group() as tg:
            answered = False

            async def watch() -> None:
                while (await receive()).get("type") != "http.disconnect":
                    pass
                if not answered:  # the client closed the connection: cancel the answer
                    tg.cancel_scope.cancel()

            tg.start_soon(watch)
            found = await answer()
            answered = True
            await keeper.answer(*found)
    finally:
        keeper.stop()


class _KeepAlive:
    """Keep-alive comments for a reply not ready by :data:`KEEPALIVE_S`: a timer of the
    loop then starts a task that begins an event stream (status 200, the SSE headers) and
    sends a comment every :data:`KEEPALIVE_S` until :meth:`stop`.

    The timer and the task are asyncio's own, not anyio's: anyio has no timer short of a
    task, and a task (with its cancel scope, and the cancelling of it) per request is what
    this path exists to save. The task only ever waits in ``send`` (uvicorn's, which waits
    only for a paused socket, before it writes) and in its sleep, so cancelling it never
    cuts a message short; :meth:`stop` cancels it before the request's task sends the
    answer."""

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]]) -> None:
        self._send = send
        self._headers = headers
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = self._loop.call_later(KEEPALIVE_S, self._start)
        self._task: asyncio.Task[None] | None = None
        self.streaming = False  # the response has begun as an event stream

    def _start(self) -> None:
        self._timer = None
        self._task = self._loop.create_task(self._ping())

    async def _ping(self) -> None:
        try:
            start = {"type": "http.response.start", "status": 200, "headers": self._headers + _SSE}
            await self._send(start)
            self.streaming = True
            while True:
                ping = {"type": "http.response.body", "body": b": ping\r\n\r\n", "more_body": True}
                await self._send(ping)
                await asyncio.sleep(KEEPALIVE_S)
        except Exception as exc:  # the connection is gone: the answer's send will find out
            logger.debug("keep-alive comments stopped: %s", exc)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._task is not None:
            self._task.cancel()

    async def answer(self, status: int, body: bytes) -> None:
        """Send the answer: a JSON response, or the event stream's last event."""
        self.stop()
        if self.streaming:
            await self._send({"type": "http.response.body", "body": _event(body)})
            return
        headers = [*self._headers, _JSON, (b"content-length", str(len(body)).encode())]
        await self._send({"type": "http.response.start", "status": status, "headers": headers})
        await self._send({"type": "http.response.body", "body": body})


class FastTransport(StreamableHTTPServerTransport):
    """The SDK's session transport, answering plain requests of its handshake-era session
    directly (:meth:`HttpFastPath.legacy`)."""

    fast: HttpFastPath
    running: dict[int | str, _Running]
    session_header: tuple[bytes, bytes]  # what each fast answer names its session with

    async def _handle_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A POST EstablishedPosts checked for this transport: what the SDK's _handle_request
        # checks (Host/Origin, Content-Type) passed there, so only the terminated state is
        # left before its POST handling.
        if scope.get(CHECKED_KEY) is not self or self.is_terminated:
            await super()._handle_request(scope, receive, send)
            return
        request = Request(scope, receive)
        if not await self.fast.legacy(self, request, send, checked=True):
            await super()._handle_post_request(scope, request, receive, send)

    async def _handle_post_request(
        self, scope: Scope, request: Request, receive: Receive, send: Send
    ) -> None:
        if not await self.fast.legacy(self, request, send):
            await super()._handle_post_request(scope, request, receive, send)


class HttpFastPath:
    """Both eras' fast path of one HTTP app (see the module docstring)."""

    def __init__(self, gateway: Gateway, enabled: bool) -> None:
        self._gateway = gateway
        self.enabled = enabled
        self.lifespan_state: Callable[[], Any] = lambda: None

    def transport(self, **kwargs: Any) -> StreamableHTTPServerTransport:
        """A session transport (the SDK's own when this path is off)."""
        if not self.enabled:
            return StreamableHTTPServerTransport(**kwargs)
        transport = FastTransport(**kwargs)
        transport.fast = self
        transport.running = {}
        session_id = kwargs.get("mcp_session_id")
        if session_id is not None:
            transport.session_header = (_SESSION_HEADER, session_id.encode())
        return transport

    async def legacy(
        self, transport: FastTransport, request: Request, send: Send, checked: bool = False
    ) -> bool:
        """Answer a handshake-era POST that reached the session's transport (the Host/Origin
        and Content-Type checks passed, the session is live; ``checked``: its Accept,
        Content-Type and session headers too, by
        :class:`~pegboard.gateway.sessions.EstablishedPosts`); False: the SDK's to answer."""
        session_id = transport.mcp_session_id
        if session_id is None:
            return False
        if not checked:
            scope_headers = request.scope["headers"]
            first = {k: v for k, v in reversed(scope_headers) if k in _VERDICT_HEADERS}
            if not await headers_admitted(transport, None, first):
                return False
            if request.headers.get(MCP_SESSION_ID_HEADER) != session_id:
                return False
        body = request.scope.get(BODY_KEY)  # read by EstablishedPosts
        if body is None:
            body = await request.body()  # kept by the request: the SDK reads it again
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return False
        if not plain_request(message, modern=False):
            _cancel_if_asked(transport.running, message)
            return False
        connection = self._gateway.hub.connection(session_id)  # None: not opened (yet)
        method, request_id = message["method"], message["id"]
        if (
            connection is None
            or (method == "tools/call" and _can_elicit(connection.client_capabilities))
            or request_id in transport.running
        ):
            return False
        running = transport.running[request_id] = _Running()
        keeper = _KeepAlive(send, [transport.session_header])
        try:
            answer = await self._answer(transport, connection, request, message, running)
            await keeper.answer(200, answer)
        finally:
            keeper.stop()
        return True

    async def _answer(
        self,
        transport: FastTransport,
        connection: Connection,
        request: Request,
        message: dict[str, Any],
        running: _Running,
    ) -> bytes:
        """The JSON-RPC answer to a handshake-era request :meth:`legacy` takes. A plain
        ``tools/call`` (tracing off) is what the runner does for it, without what cannot
        apply (its two validations of the params, whose shape :func:`plain_request`
        checked; the request-state boundary, which has no ``requestState`` to open and no
        input-required result to seal; the span): the session and context the runner
        builds, the client counted and tracked, :meth:`Gateway.call` for the caller, and
        the result shaped for the version by :func:`call_response` (the stdio fast
        path's). The rest run the runner."""
        method, request_id = message["method"], message["id"]
        params: dict[str, Any] | None = message.get("params")
        try:
            try:
                if params is not None and method == "tools/call" and not self._gateway.spans:
                    dctx = _CallContext(request, request_id)
                    session = ServerSession(dctx, connection, request_meta=_extract_meta(params))
                    version = connection.protocol_version
                    self._gateway.seen(session, "tools/call", version)
                    name, arguments = params["name"], params.get("arguments") or {}
                    principal = principal_of_scope(request.scope)
                    result = await self._gateway.call(
                        session, request_id, name, arguments, principal
                    )
                    return call_response(request_id, version, result).removesuffix(b"\n")
                runner = ServerRunner(self._gateway.server, connection, self.lifespan_state())
                found = await runner.on_request(
                    _dispatch_context(request, request_id), method, params
                )
                return _result(request_id, found)
            except asyncio.CancelledError:
                if not running.taken_back():
                    raise  # not the client's cancel (or that and another): stays a cancel
            error = ErrorData(code=REQUEST_CANCELLED, message="Request cancelled")
        except Exception as exc:
            handled = handler_exception_to_error_data(exc)
            if handled is None:  # as the SDK's dispatcher answers it
                logger.exception("handler for %r raised", method)
                handled = ErrorData(code=0, message=str(exc))
            error = handled
        finally:
            transport.running.pop(request_id, None)
        reply = JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        return reply.model_dump_json(by_alias=True, exclude_unset=True).encode()

    async def modern(
        self, scope: Scope, receive: Receive, send: Send, manager: Any
    ) -> Receive | None:
        """Answer a 2026-07-28 POST (None) if this path takes it; else the ``receive`` the
        SDK is to read it from (the body given back)."""
        request = Request(scope, receive)
        security = TransportSecurityMiddleware(manager.security_settings)
        if await security.validate_request(request, is_post=True) is not None:
            return receive
        has_json, has_sse = check_accept_headers(request)
        if not has_json or not (manager.json_response or has_sse):
            return receive
        body = await request.body()
        replayed = replay(body, receive)
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return replayed
        if not plain_request(message, modern=True):
            return replayed
        if find_duplicated_routing_header(request.headers.items()) is not None:
            return replayed
        verdict = classify_inbound_request(message, headers=dict(request.headers))
        if isinstance(verdict, InboundLadderRejection):
            return replayed
        method = message["method"]
        if method == "tools/call" and _can_elicit(verdict.client_capabilities):
            return replayed
        server, state = self._gateway.server, manager._lifespan_state
        req = JSONRPCRequest.model_validate(message)
        if await _mcp_param_rejection(server, request, req, verdict, state) is not None:
            return replayed
        connection = Connection.from_envelope(
            verdict.protocol_version, verdict.client_info, verdict.client_capabilities
        )
        dctx = _dispatch_context(request, req.id)

        async def answer() -> tuple[int, bytes]:
            served = serve_one(
                server, dctx, method, req.params, connection=connection, lifespan_state=state
            )
            reply = await _to_jsonrpc_response(req.id, served)
            if isinstance(reply, JSONRPCResponse):
                return 200, _result(req.id, reply.result)
            status = ERROR_CODE_HTTP_STATUS.get(reply.error.code, 200)
            dumped = reply.model_dump(mode="json", by_alias=True, exclude_none=True)
            return status, json.dumps(dumped, separators=(",", ":")).encode()

        await _reply(send, answer, [], receive)
        return None


class _Running:
    """A fast request in its task, which the client's ``notifications/cancelled`` cancels:
    the task's own cancel, taken back where the answer is made (an anyio cancel scope per
    request costs ~2% of an HTTP call's instructions)."""

    __slots__ = ("asked", "task")

    def __init__(self) -> None:
        self.task = asyncio.current_task()
        self.asked = False

    def cancel(self) -> None:
        if not self.asked and self.task is not None:
            self.asked = True
            self.task.cancel()

    def taken_back(self) -> bool:
        """After a ``CancelledError``: True if it was only this cancel's (then undone)."""
        return self.asked and self.task is not None and self.task.uncancel() == 0


def _cancel_if_asked(running: dict[int | str, _Running], message: Any) -> None:
    if isinstance(message, dict) and message.get("method") == "notifications/cancelled":
        params = message.get("params")
        cancelled = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(cancelled, int | str) and cancelled in running:
            running[cancelled].cancel()


def _result(request_id: int | str, result: dict[str, Any]) -> bytes:
    return b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (
        json.dumps(request_id).encode(),
        json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode(),
    )

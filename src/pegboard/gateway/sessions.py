"""Handshake-era sessions that any replica can serve: no sticky load balancer needed.

A handshake-era client (``initialize``, then ``Mcp-Session-Id`` on every request) behind a
round-robin balancer sends its requests to every replica in turn; a replica that has not seen
the session would answer "Session not found". pegboard makes the session id self-contained
instead: it is the session's handshake (protocol version, client capabilities and info) and
its owner (the credential that opened it), encrypted and authenticated with AES-256-GCM under a
key kept in the shared store (every replica reads the same one). A replica given an id it does
not hold opens it, checks it is unaltered, unexpired and presented by its owner, and revives
the session: a fresh transport under that id, initialized from the sealed handshake, then the
request. Nothing is written per session and nothing is looked up: a replica that dies costs
its sessions nothing, the next replica revives them.

What stays with one replica is a request in flight. A tool call that asks the user (an
elicitation on the call's response stream) waits on the replica that runs it, and the client's
answer is a separate POST that the balancer may send anywhere. With a PostgreSQL store that
POST is relayed (``NOTIFY`` on :data:`RELAY_CHANNEL`, answered 202 at once), and the replica
holding the session's waiting call takes it from there. Notifications (list changes) go out on
the session's GET stream from whichever replica holds it: every replica follows the store's
change feed.

Why this design and not a session record in the store: a record is a write per session and a
read per request on every replica, must be expired and cleaned, and still needs the relay for
answers; a sealed id costs one AES-GCM open per request a replica has not seen yet. Its limit:
a session ended (``DELETE``) on one replica can be revived by its owner on another until the id
expires (:data:`SESSION_TTL_S`), as if it had never ended.

This builds on the SDK's :class:`~mcp.server.streamable_http_manager.StreamableHTTPSessionManager`
(pinned ``mcp`` 2.3): :func:`revivable` swaps the manager of an app for this subclass.
"""

from __future__ import annotations

import base64
import contextvars
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import RequestBodyLimitMiddleware, TransportSecurityMiddleware
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pegboard.errors import CatalogError
from pegboard.gateway.http_fast import (
    BODY_KEY,
    CHECKED_KEY,
    FastTransport,
    HttpFastPath,
    headers_admitted,
    headers_known,
    replay,
)
from pegboard.gateway.http_guards import may_have_odd_id, plain_host_and_origin
from pegboard.gateway.identity import HTTP_SCOPE

logger = logging.getLogger("pegboard.gateway")

KEY_NAME = "legacy-sessions"
PREFIX = "pbs1."
SESSION_TTL_S = 24 * 3600.0
RELAY_CHANNEL = "pegboard_sessions"
_AAD = b"pegboard handshake session v1"
_ORIGIN = frozenset({b"host", b"origin"})  # what the transport's rebinding check reads
_VERSION = MCP_PROTOCOL_VERSION_HEADER.lower().encode()
_SESSION = MCP_SESSION_ID_HEADER.lower().encode()
_READ = frozenset(
    {_VERSION, _SESSION, b"content-length", b"content-type", b"accept", b"authorization"} | _ORIGIN
)  # what the layers EstablishedPosts skips read
_opening: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "pegboard_opening", default=None
)


class SessionSeal:
    """Seals and opens self-contained session ids (see the module docstring)."""

    def __init__(self, key: bytes, ttl: float = SESSION_TTL_S) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._aead = AESGCM(key[:32])
        self.ttl = ttl

    def seal(self, state: dict[str, Any]) -> str:
        nonce = os.urandom(12)
        plain = json.dumps({**state, "iat": time.time()}, separators=(",", ":")).encode()
        sealed = nonce + self._aead.encrypt(nonce, plain, _AAD)
        return PREFIX + base64.urlsafe_b64encode(sealed).decode().rstrip("=")

    def open(self, session_id: str) -> dict[str, Any] | None:
        """The sealed state, or None (not ours, altered, expired)."""
        from cryptography.exceptions import InvalidTag

        if not session_id.startswith(PREFIX) or len(session_id) > 8192:
            return None
        text = session_id[len(PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            state = json.loads(self._aead.decrypt(raw[:12], raw[12:], _AAD))
        except (ValueError, InvalidTag):
            return None
        if not isinstance(state, dict) or time.time() - float(state.get("iat", 0)) > self.ttl:
            return None
        return state


def _owner(scope: Scope) -> dict[str, Any] | None:
    requestor = _requestor(scope)
    return dict(requestor) if requestor is not None else None


async def _body(receive: Receive, first: Message | None = None) -> bytes:
    """The request's body, read from ``receive`` (after its ``first`` message, if read)."""
    chunks = []
    message = first if first is not None else await receive()
    while message["type"] == "http.request":
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
        message = await receive()
    return b"".join(chunks)


async def _nothing_more() -> Message:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


def _replay(body: bytes) -> Receive:
    return replay(body, _nothing_more)


async def _discard(message: Message) -> None:
    return None


def _post(scope: Scope, body: dict[str, Any], session_id: str | None, version: str) -> Scope:
    """A POST of ``body`` shaped like ``scope`` (its Host and Origin kept for the transport's
    checks), with the session and protocol headers a revived session needs."""
    headers = [(k, v) for k, v in scope.get("headers", []) if k in _ORIGIN]
    headers += [
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", version.encode()),
    ]
    if session_id is not None:
        headers.append((MCP_SESSION_ID_HEADER.encode(), session_id.encode()))
    return {**scope, "method": "POST", "headers": headers, "_pegboard_body": body}


def _is_answer(message: Any) -> bool:
    """A JSON-RPC response (or a batch of them): a client's answer to a server request."""
    items = message if isinstance(message, list) else [message]
    return bool(items) and all(
        isinstance(m, dict) and "method" not in m and ("result" in m or "error" in m) for m in items
    )


class ReplicaSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager with sealed, revivable ids and relayed answers."""

    seal: SessionSeal
    relay: Callable[[str], Awaitable[None]] | None
    fast: HttpFastPath

    async def _handle_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A 2026-07-28 request (named by its header, as the SDK routes it) may take the
        # fast path; the handshake era's is in the session's transport.
        header = MCP_PROTOCOL_VERSION_HEADER.lower().encode()
        version = next((v for k, v in scope["headers"] if k == header), None)
        if version is None or version.decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS:
            await super()._handle_request(scope, receive, send)
            return
        token = HTTP_SCOPE.set(scope)  # whose listing the Mcp-Param check reads
        try:
            if self.fast.enabled and scope.get("method") == "POST" and self._task_group:
                answered = await self.fast.modern(scope, receive, send, self)
                if answered is None:
                    return
                receive = answered
            await super()._handle_request(scope, receive, send)
        finally:
            HTTP_SCOPE.reset(token)

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        session_id = next(
            (v.decode() for k, v in scope["headers"] if k == MCP_SESSION_ID_HEADER.encode()),
            None,
        )
        message: Any = None
        if scope.get("method") == "POST":
            body = await _body(receive)
            receive = _replay(body)
            try:
                message = json.loads(body)
            except ValueError:
                message = None
        if session_id is None:
            if isinstance(message, dict) and message.get("method") == "initialize":
                token = _opening.set(dict(message.get("params") or {}))
                try:
                    await super()._handle_stateful_request(scope, receive, send)
                finally:
                    _opening.reset(token)
                return
        elif self.relay is not None and _is_answer(message):
            # The call waiting for this answer may be on another replica: every replica
            # holding the session hears it (this one too, through the same channel).
            origin = {k.decode(): v.decode() for k, v in scope["headers"] if k in _ORIGIN}
            note = {"session": session_id, "message": message, "headers": origin}
            try:
                await self.relay(json.dumps(note))
            except CatalogError as exc:
                # The store is lost: this replica's copy takes the answer (it reaches the
                # waiting call if that runs here; on another replica it waits unanswered).
                logger.warning("%s; an answer is taken by this replica only", exc)
            else:
                await send({"type": "http.response.start", "status": 202, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
        if session_id is not None and session_id not in self._server_instances:
            await self._revive(session_id, scope)
        await super()._handle_stateful_request(scope, receive, send)

    def established(self, scope: Scope, headers: Mapping[bytes, bytes]) -> FastTransport | None:
        """The transport of the live handshake-era session a POST with these ``headers``
        (each given once) names, if this manager would hand the request to it as it is: a
        declared body size within the limit, a handshake-era (or no) protocol version
        header, a fast-path session this replica holds, asked for by the credential that
        opened it (:class:`EstablishedPosts`; the body's own checks are
        :meth:`established_body`'s); None: the request takes the whole route."""
        if self._task_group is None:
            return None
        version = headers.get(_VERSION)
        if version is not None and version.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS:
            return None
        declared = headers.get(b"content-length")
        if declared is not None and (
            not declared.isdigit() or int(declared) > self.max_request_body_size
        ):
            return None  # the limit's own check (or a value it reads its own way)
        session_id = headers.get(_SESSION, b"").decode("latin-1")
        transport = self._server_instances.get(session_id)
        if not isinstance(transport, FastTransport) or _requestor(
            scope
        ) != self._session_owners.get(session_id):
            return None
        return transport

    def established_body(self, headers: Mapping[bytes, bytes], body: bytes) -> bool:
        """Whether the body of a POST :meth:`established` took passes what the route would
        check of it: within the size limit, as long as declared, no request id the guard
        would parse, no answer to relay."""
        if len(body) > self.max_request_body_size:
            return False
        declared = headers.get(b"content-length")
        if declared is not None and int(declared) > len(body):
            return False  # a body cut short: the SDK answers
        if may_have_odd_id(body):
            return False
        if self.relay is not None:
            try:
                return not _is_answer(json.loads(body))
            except (ValueError, RecursionError):
                return False
        return True

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        opening = _opening.get()
        if opening is None:
            return super()._admit_session(requestor)
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            return None
        state = {
            "v": opening.get("protocolVersion"),
            "caps": opening.get("capabilities") or {},
            "info": opening.get("clientInfo") or {},
            "own": dict(requestor) if requestor is not None else None,
        }
        return self._register(self.seal.seal(state), requestor)

    def _register(self, session_id: str, requestor: Any) -> StreamableHTTPServerTransport:
        transport = self.fast.transport(
            mcp_session_id=session_id,
            is_json_response_enabled=self.json_response,
            event_store=self.event_store,
            security_settings=self.security_settings,
            retry_interval=self.retry_interval,
            idle_timeout=self.session_idle_timeout,
        )
        if requestor is not None:
            self._session_owners[session_id] = requestor
        self._server_instances[session_id] = transport
        return transport

    async def _revive(self, session_id: str, scope: Scope) -> None:
        """Serve a session another replica opened (if its id opens and its owner asks)."""
        state = self.seal.open(session_id)
        if state is None or state.get("own") != _owner(scope):
            return  # the SDK answers "Session not found", as for any unknown id
        user = scope.get("user")
        requestor = authorization_context(user) if isinstance(user, AuthenticatedUser) else None
        async with self._session_creation_lock:
            if session_id in self._server_instances:
                return
            transport = self._register(session_id, requestor)
        version = str(state.get("v") or "2025-11-25")
        initialize = {
            "jsonrpc": "2.0",
            "id": "pegboard-revive",
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": state.get("caps") or {},
                "clientInfo": state.get("info") or {"name": "-", "version": "-"},
            },
        }
        await self._serve_opening_request(
            transport, *_request(scope, initialize, None, version), _discard
        )
        if session_id not in self._server_instances:
            return
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await transport.handle_request(*_request(scope, initialized, session_id, version), _discard)
        logger.info("revived session %s... on this replica", session_id[:16])

    def relayed(self, payload: str) -> None:
        """A relayed answer (``RELAY_CHANNEL``): handed to this replica's copy of the session."""
        if self._task_group is None:
            return
        try:
            note = json.loads(payload)
            session_id, message = str(note["session"]), note["message"]
            headers = [(str(k).encode(), str(v).encode()) for k, v in note["headers"].items()]
        except (ValueError, KeyError, TypeError, AttributeError):
            return
        transport = self._server_instances.get(session_id)
        if transport is None:
            return
        scope: Scope = {"type": "http", "path": "/mcp", "headers": headers, "query_string": b""}
        request, _ = _request(scope, {}, session_id, "2025-11-25")
        body = json.dumps(message).encode()

        async def hand_over() -> None:
            await transport.handle_request(request, _replay(body), _discard)

        self._task_group.start_soon(hand_over)


class EstablishedPosts:
    """In front of the whole HTTP app, a POST to the MCP path for an established
    handshake-era session is checked once, here, against everything the layers it skips
    would check, and handed to that session's transport marked as checked
    (:data:`~pegboard.gateway.http_fast.CHECKED_KEY`), which then answers it without
    checking again (its fast path, or the SDK's POST handling). The layers skipped:
    pegboard's bearer token (``admits``), Host/Origin shape (``shape``) and request id
    guards; Starlette's middleware and routing, the body limit and both session managers'
    handlers (:meth:`ReplicaSessionManager.established`, :meth:`~ReplicaSessionManager.
    established_body`); the transport's Host/Origin allow-list and its Content-Type and
    Accept checks (:func:`~pegboard.gateway.http_fast.headers_admitted`). The transport's
    own ``handle_request`` still runs (its idle accounting, its terminated state).

    A request that fails any check, or whose headers this class cannot read as each layer
    reads them (one of the headers they read given twice: the guards read a header's last
    value, Starlette its first), goes through the whole app, with the body given back if it
    was read, and gets that layer's own answer. Only where the app has no authentication
    middleware of its own (no OAuth resource server)."""

    def __init__(
        self,
        app: ASGIApp,
        manager: ReplicaSessionManager,
        path: str,
        *,
        admits: Callable[[bytes], bool] | None = None,
        shape: bool = False,
    ) -> None:
        self.app = app
        self.manager = manager
        self.path = path
        self._admits = admits
        self._shape = shape
        self._security = TransportSecurityMiddleware(manager.security_settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method") != "POST"
            or scope.get("path") != self.path
            or scope.get("root_path")
        ):
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for key, value in scope["headers"]:
            if key in _READ:
                if key in headers:  # given twice: the layers' own reading decides
                    await self.app(scope, receive, send)
                    return
                headers[key] = value
        if (self._admits is not None and not self._admits(headers.get(b"authorization", b""))) or (
            self._shape
            and not plain_host_and_origin(headers.get(b"host", b""), headers.get(b"origin"))
        ):
            await self.app(scope, receive, send)
            return
        transport = self.manager.established(scope, headers)
        admitted = headers_known(self._security, headers)
        if transport is not None and admitted is None:
            admitted = await headers_admitted(transport, self._security, headers)
        if transport is None or not admitted:
            await self.app(scope, receive, send)
            return
        first = await receive()
        if first["type"] == "http.request" and not first.get("more_body"):
            body = first.get("body", b"")
        else:
            body = await _body(receive, first)
        receive = replay(body, receive)
        if not self.manager.established_body(headers, body):
            await self.app(scope, receive, send)
            return
        scope[BODY_KEY] = body
        scope[CHECKED_KEY] = transport
        await transport.handle_request(scope, receive, send)
        if transport.is_terminated:  # as the SDK's manager: forget it now
            await self.manager._discard_session(headers[_SESSION].decode("latin-1"), transport)


def _requestor(scope: Scope) -> Any:
    """Who opened a session, as the SDK's manager records it (None: no OAuth identity)."""
    user = scope.get("user")
    return authorization_context(user) if isinstance(user, AuthenticatedUser) else None


def _request(
    scope: Scope, body: dict[str, Any], session_id: str | None, version: str
) -> tuple[Scope, Receive]:
    shaped = _post(scope, body, session_id, version)
    payload = json.dumps(shaped.pop("_pegboard_body")).encode()
    return shaped, _replay(payload)


def revivable(
    manager: StreamableHTTPSessionManager,
    key: bytes,
    relay: Callable[[str], Awaitable[None]] | None,
    fast: HttpFastPath,
) -> ReplicaSessionManager:
    """``manager`` (an app's, not yet running) turned into a :class:`ReplicaSessionManager`;
    ``fast``: the fast path of plain requests (:mod:`pegboard.gateway.http_fast`)."""
    manager.__class__ = ReplicaSessionManager
    assert isinstance(manager, ReplicaSessionManager)
    manager.seal = SessionSeal(key)
    manager.relay = relay
    manager.fast = fast
    manager.fast.lifespan_state = lambda: manager._lifespan_state
    # The size limit in front of the subclass's request handler (the SDK bound its own).
    manager.asgi_app = RequestBodyLimitMiddleware(
        manager._handle_request, manager.max_request_body_size
    )
    return manager

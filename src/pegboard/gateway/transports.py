"""Serving a :class:`~pegboard.gateway.server.Gateway` over stdio or streamable HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import ipaddress
import json
import logging
import socket
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.to_thread
from mcp.server.runner import serve_dual_era_loop

from pegboard.errors import ConfigError
from pegboard.gateway import early
from pegboard.gateway.fastpath import FastToolCalls
from pegboard.gateway.http_guards import HeaderShapeMiddleware, RequestIdMiddleware
from pegboard.gateway.ready import write_snapshot
from pegboard.gateway.server import Gateway
from pegboard.gateway.stdio import pipe_stdio_server

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from pegboard.gateway.oauth import JwtVerifier
    from pegboard.gateway.sessions import ReplicaSessionManager
    from pegboard.mcp.spawn import Launch

logger = logging.getLogger("pegboard.gateway")

MCP_PATH = "/mcp"


async def serve_stdio(gateway: Gateway, launches: Sequence[Launch] = ()) -> None:
    """Serve one client on stdin/stdout until it disconnects.

    Takes over from the early reader (:mod:`pegboard.gateway.early`): a client answered from
    a snapshot that differs from the live list gets ``tools/list_changed``; the snapshot is
    rewritten whenever the exposed tools change. ``launches`` (the stdio servers started at
    start-up) go into the snapshot as the next start's ``spawn`` plan.
    """
    server = gateway.server
    handoff = early.take_over()
    answers = handoff.answers if handoff else None
    version = answers.version if answers else None
    listed = answers.listed if answers else None
    listed_as = answers.listed_version if answers else None
    stale = listed_as is not None and listed != _live(gateway, listed_as)
    async with (
        server.lifespan(server) as state,
        pipe_stdio_server(FastToolCalls(gateway, version), handoff) as (read, write),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(gateway.announce_changes)
        if answers is not None and answers.searched:
            from pegboard.gateway.search_snapshot import audit_early_searches

            await audit_early_searches(gateway, answers.searched, answers.client)
        if stale and listed_as == version:
            tg.start_soon(gateway.announce_when_initialized)
        elif stale:  # a modern client listed from the snapshot: tell it once it listens
            tg.start_soon(gateway.announce_when_listening)
        target = early.snapshot_target()
        if target is not None:
            plan = [launch.plan() for launch in launches]
            tg.start_soon(_keep_snapshot, gateway, target, plan)
        # Both eras: the client's first request decides (initialize: handshake era; a
        # request with the 2026-07-28 envelope: modern). init_options=None: the initialize
        # result is built at handshake time, so it carries the instructions of that moment.
        await serve_dual_era_loop(server, read, write, lifespan_state=state)
        tg.cancel_scope.cancel()


def _live(gateway: Gateway, version: str) -> object:
    return json.loads(gateway.tools_list_json(version))


async def _keep_snapshot(gateway: Gateway, target: Path, plan: list[dict[str, Any]]) -> None:
    """Forever: write the ready snapshot now and after every change of the exposed tools."""
    while True:
        try:
            # Shielded: a client that disconnects at once still leaves the next start a snapshot.
            with anyio.CancelScope(shield=True):
                snapshot = gateway.ready_snapshot() | {"spawn": plan}
                await anyio.to_thread.run_sync(write_snapshot, target, snapshot)
        except Exception as exc:  # a cache: serving goes on without it
            logger.warning("could not write the ready snapshot %s: %s", target, exc)
        await gateway.snapshot_due.take()


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address in a spelling pegboard binds without a token.

    Unusual spellings (``127.1``, ``0x7f000001``, ``localhost.``) are not loopback here, so they
    need a token like any other address; IPv4-mapped IPv6 counts by its IPv4 part.
    """
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool((mapped or address).is_loopback)


_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def rebinding_guard(host: str) -> Any:
    """The SDK's Host/Origin check, on, for a bind at ``host``.

    The SDK turns it on by itself only for the literal hosts ``127.0.0.1``, ``localhost`` and
    ``::1``; any other loopback spelling (``127.0.0.2``, ``[::ffff:127.0.0.1]``) would answer a
    DNS-rebound browser page. Allowed: the usual loopback names and the bound host itself.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    bound = host.strip("[]")
    shown = f"[{bound}]" if ":" in bound else bound
    hosts = list(dict.fromkeys((*_LOOPBACK_HOSTS, shown)))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:*" for h in hosts] + hosts,
        allowed_origins=[f"http://{h}:*" for h in hosts] + [f"http://{h}" for h in hosts],
    )


class BearerTokenMiddleware:
    """Refuses HTTP requests without ``Authorization: Bearer <token>`` (constant-time check)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    def admits(self, given: bytes) -> bool:
        """Whether an ``Authorization`` value (``b""``: none) carries the token."""
        return hmac.compare_digest(given, self._expected)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.admits(
            dict(scope.get("headers", ())).get(b"authorization", b"")
        ):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"text/plain"),
                        (b"www-authenticate", b'Bearer realm="pegboard"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b"missing or wrong token\n"})
            return
        await self.app(scope, receive, send)


ADMIN_PATH = "/admin"
METRICS_PATH = "/metrics"


class BesideMcp:
    """Sends ``/admin`` (and below) and ``/metrics`` to the admin UI, which authenticates for
    itself, and everything else (lifespan included) to the MCP app."""

    def __init__(self, mcp_app: ASGIApp, admin: ASGIApp) -> None:
        self.mcp_app = mcp_app
        self.admin = admin

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path in (ADMIN_PATH, METRICS_PATH) or path.startswith(ADMIN_PATH + "/"):
            await self.admin(scope, receive, send)
        else:
            await self.mcp_app(scope, receive, send)


def http_app(
    gateway: Gateway,
    *,
    host: str,
    token: str | None,
    verifier: JwtVerifier | None = None,
    admin: ASGIApp | None = None,
) -> ASGIApp:
    """The streamable HTTP app: bearer token, OAuth resource server (``verifier``) or neither;
    with ``admin``, the admin UI beside it at ``/admin``.

    With a verifier the SDK's middleware checks every request's token and answers 401 with
    ``WWW-Authenticate: Bearer ... resource_metadata="..."``; the RFC 9728 metadata is served at
    ``/.well-known/oauth-protected-resource`` and under the endpoint's path.
    """
    app = _mcp_http_app(gateway, host=host, token=token, verifier=verifier)
    return BesideMcp(app, admin) if admin is not None else app


def _mcp_http_app(
    gateway: Gateway, *, host: str, token: str | None, verifier: JwtVerifier | None
) -> ASGIApp:
    if token and verifier:
        raise ConfigError(
            "both [gateway] token (or PEGBOARD_TOKEN) and [auth] are set: use one of them"
        )
    if not is_loopback(host) and not (token or verifier):
        raise ConfigError(
            f"refusing to serve on non-loopback address {host} without a bearer token; set "
            "[gateway] token in the config or PEGBOARD_TOKEN, or [auth] issuer and audience, "
            "or bind 127.0.0.1"
        )
    # Without a token, or on loopback, a browser page is the threat: always check Host/Origin.
    guard = rebinding_guard(host) if (not (token or verifier) or is_loopback(host)) else None
    if verifier is None:
        app: ASGIApp = gateway.server.streamable_http_app(
            streamable_http_path=MCP_PATH, host=host, transport_security=guard
        )
        manager = _revivable_sessions(gateway)
        app = RequestIdMiddleware(app)
        if guard is not None:
            app = HeaderShapeMiddleware(app)
        bearer = BearerTokenMiddleware(app, token) if token else None
        full = bearer or app
        if not manager.fast.enabled:
            return full
        from pegboard.gateway.sessions import EstablishedPosts

        admits = bearer.admits if bearer is not None else None
        return EstablishedPosts(full, manager, MCP_PATH, admits=admits, shape=guard is not None)
    from mcp.server.auth.settings import AuthSettings

    settings = AuthSettings(
        issuer_url=verifier.issuer,  # type: ignore[arg-type]
        resource_server_url=verifier.audience,  # type: ignore[arg-type]
        validate_token_resource=True,
    )
    app = gateway.server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=host,
        transport_security=guard,
        auth=settings,
        token_verifier=verifier,
        custom_starlette_routes=_root_metadata_route(verifier),
    )
    _revivable_sessions(gateway)
    app = RequestIdMiddleware(app)
    return HeaderShapeMiddleware(app) if guard is not None else app


def _revivable_sessions(gateway: Gateway) -> ReplicaSessionManager:
    """Handshake-era session ids any replica on the store can serve
    (:mod:`pegboard.gateway.sessions`); with a PostgreSQL store, answers relayed between
    replicas; plain requests of both eras answered on the fast path
    (:mod:`pegboard.gateway.http_fast`)."""
    from pegboard.gateway.http_fast import HttpFastPath
    from pegboard.gateway.sessions import KEY_NAME, RELAY_CHANNEL, revivable
    from pegboard.mcp import direct

    store = gateway.rounds.store
    db = getattr(store, "db", None)  # the PostgreSQL store's Database
    relay = None
    if db is not None:

        async def relay(payload: str) -> None:
            await anyio.to_thread.run_sync(db.notify, RELAY_CHANNEL, payload)

    made = gateway.server._session_manager  # the SDK keeps the manager it just built there
    assert made is not None
    fast = HttpFastPath(gateway, direct.enabled())
    manager = revivable(made, store.secret(KEY_NAME), relay, fast)
    if db is not None:
        gateway.background.append(lambda: db.listen(RELAY_CHANNEL, manager.relayed))
    return manager


def _root_metadata_route(verifier: JwtVerifier) -> list[Any]:
    """The protected-resource metadata at the root too, for clients that look there first."""
    from urllib.parse import urlsplit

    from mcp.server.auth.routes import create_protected_resource_routes

    if urlsplit(verifier.audience).path.strip("/") == "":
        return []  # the SDK's route is already the root one
    routes = create_protected_resource_routes(
        resource_url=verifier.audience,  # type: ignore[arg-type]
        authorization_servers=[verifier.issuer],  # type: ignore[list-item]
    )
    from starlette.routing import Route

    return [
        Route("/.well-known/oauth-protected-resource", route.endpoint, methods=["GET", "OPTIONS"])
        for route in routes
        if isinstance(route, Route)
    ]


async def serve_http(
    gateway: Gateway,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    verifier: JwtVerifier | None = None,
    log_level: str = "warning",
    admin: ASGIApp | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until cancelled.

    The bound URL is printed to stderr (``port=0`` picks a free port). ``sock``: a socket
    already bound by :func:`bind_listening_socket` (``pegboard serve`` binds before it starts
    any upstream server, so a port in use fails at once); else ``host:port`` is bound here.
    """
    if verifier is not None:
        await verifier.start()  # an unreachable issuer is a one-line error
    app = http_app(gateway, host=host, token=token, verifier=verifier, admin=admin)
    gateway.server.handshake_view = gateway.nameless_view()  # the caller is not known then
    sock = sock if sock is not None else bind_listening_socket(host, port)
    bound: Any = sock.getsockname()
    shown = f"[{host}]" if sock.family == socket.AF_INET6 else host
    print(
        f"pegboard serving MCP on http://{shown}:{bound[1]}{MCP_PATH}", file=sys.stderr, flush=True
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(gateway.announce_changes)
        for task in gateway.background:
            tg.start_soon(task)
        try:
            await serve_asgi(app, sock, log_level=log_level)
        finally:
            tg.cancel_scope.cancel()


async def serve_asgi(app: ASGIApp, sock: socket.socket, *, log_level: str = "warning") -> None:
    """Serve ``app`` with uvicorn on the listening ``sock`` until cancelled (then a graceful
    shutdown); the socket is closed on return."""
    server = _quiet_server_class()(uvicorn_config(app, log_level=log_level))
    logging.getLogger("uvicorn.error").addFilter(_ShutdownNoise(server))
    try:
        await _serve_until_cancelled(server, sock)
    finally:
        sock.close()


SHUTDOWN_GRACE_S = 2


def uvicorn_config(
    app: ASGIApp, *, log_level: str = "warning", lifespan: Literal["on", "off"] = "on"
) -> Any:
    """uvicorn's config for ``app``: its HTTP protocol (httptools when installed, else h11),
    each connection's writes coalesced (:class:`~pegboard.gateway.coalesce.CoalescedWrites`)."""
    import uvicorn

    from pegboard.gateway.coalesce import coalescing

    level = logging.getLevelName(log_level.upper())
    return uvicorn.Config(
        app,
        log_level=log_level,
        lifespan=lifespan,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        http=coalescing(),
        # uvicorn makes each response's access line unless told not to, and its logger drops
        # it below info: not made at all then.
        access_log=not isinstance(level, int) or level <= logging.INFO,
    )


def check_port(port: int) -> None:
    """Raise ConfigError naming the valid range unless ``port`` is a TCP port number."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"port {port} is out of range: use 0-65535 (0 picks a free port)")


def bind_listening_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket; a port out of range or in use is a ConfigError naming the fix."""
    check_port(port)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on accepted sockets whose protocol
    # says TCP. Without it a kept-alive request's response (headers and body written
    # separately) waits ~40 ms for the client's delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"{host}:{port} is already in use (another pegboard serve?): stop that process "
                "or choose another port with --port or [gateway] port (0 picks a free one)"
            ) from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    # Listen before announcing the URL: a client that connects as soon as it reads the line
    # then waits in the backlog for uvicorn instead of being refused.
    sock.listen(2048)
    return sock


async def _serve_until_cancelled(server: Any, sock: socket.socket) -> None:
    """Run uvicorn; when cancelled (SIGTERM, Ctrl-C), shut it down gracefully first.

    Cancelling uvicorn from outside would cancel its lifespan and open requests mid-flight
    (each a CancelledError traceback on stderr); asking it to exit closes them in order.
    """
    done = anyio.Event()
    server_scope = anyio.CancelScope(shield=True)

    async def run() -> None:
        with server_scope:
            try:
                await server.serve(sockets=[sock])
            finally:
                done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        try:
            await done.wait()
        finally:
            server.should_exit = True
            with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_GRACE_S + 3):
                await done.wait()
            server_scope.cancel()


def _quiet_server_class() -> type[Any]:
    import uvicorn

    class QuietServer(uvicorn.Server):
        """uvicorn without its own signal handlers: ``pegboard serve`` owns SIGTERM/SIGINT.

        uvicorn would re-raise a captured SIGTERM after shutting down, killing the process
        with status 143 instead of letting it stop its child servers and exit 0.
        """

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return QuietServer


class _ShutdownNoise(logging.Filter):
    """Drops uvicorn's complaints about requests cut short by a shutdown we asked for.

    A client's open event stream (GET /mcp) never ends by itself, so it is cut after the
    grace period; uvicorn logs that as errors ("timeout graceful shutdown exceeded",
    "returned without completing response", CancelledError) although nothing went wrong.
    Before shutdown every record passes.
    """

    def __init__(self, server: Any) -> None:
        super().__init__()
        self._server = server

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._server.should_exit:
            return True
        cancelled = record.exc_info is not None and isinstance(
            record.exc_info[1], asyncio.CancelledError
        )
        message = record.getMessage()
        cut_short = message.startswith("ASGI callable returned without completing") or (
            message.endswith("timeout graceful shutdown exceeded")  # an open event stream
        )
        return not (cancelled or cut_short)

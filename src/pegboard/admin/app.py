"""The admin UI as a Starlette app under ``/admin`` (the gateway's port, or ``pegboard ui``).

Pages are Jinja2 templates rendered on the server from the service layer
(:class:`~pegboard.service.Service`); the static files (CSS, a small script, HTMX) are part of
the package. Every request passes :func:`guarded` (see :mod:`pegboard.admin.security`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pegboard.admin.security import (
    SECURITY_HEADERS,
    SESSION_COOKIE,
    SESSION_SECONDS,
    AdminAuth,
    Refused,
    Session,
    bearer_of,
)
from pegboard.core.principal import Principal

if TYPE_CHECKING:
    from jinja2 import Environment
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp, Receive, Scope, Send

    from pegboard.admin.metrics import GatewayMetrics
    from pegboard.service import Service

PREFIX = "/admin"
METRICS_PATH = "/metrics"


@dataclass(frozen=True, slots=True)
class ClientSession:
    """One connected MCP client, as the sessions page shows it."""

    session_id: str
    client: str
    protocol_version: str
    can_elicit: bool
    connected_at: float


@dataclass
class AdminState:
    """What the pages read: the services, the authentication, and (on a gateway) its live
    client connections."""

    service: Service
    auth: AdminAuth
    sessions: Callable[[], list[ClientSession]] | None = None
    metrics: GatewayMetrics | None = None
    secure_cookies: bool = False
    templates: Environment = field(init=False)

    def __post_init__(self) -> None:
        from pegboard.admin.render import environment

        self.templates = environment()


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is looking: the principal, and the browser session (None for a bearer header,
    which no other site's page can make a browser send, so it needs no CSRF token)."""

    principal: Principal
    session: Session | None
    csrf: str = ""


Page = Callable[["Request", Viewer], Awaitable["Response"]]


def guarded(
    state: AdminState, page: Page, *, change: bool = False, api: bool = False
) -> Callable[..., Any]:
    """``page`` behind the admin checks: an admin principal, and for a state change
    (``change``) this session's CSRF token and a same-origin request. An ``api`` endpoint
    answers 401 where a page would send to the login."""
    from starlette.responses import PlainTextResponse, RedirectResponse

    auth = state.auth

    async def endpoint(request: Request) -> Response:
        host, origin = request.headers.get("host"), request.headers.get("origin")
        new_cookie = None
        try:
            viewer = await _viewer(auth, request)
            if viewer is None and auth.open_locally and not change:
                session, new_cookie = auth.new_session(auth_local())
                viewer = Viewer(session.principal, session, auth.csrf_token(session))
            if viewer is None:
                if change or api or request.method != "GET":
                    raise Refused(403 if auth.open_locally else 401, _login_reason(auth))
                query = f"?{request.url.query}" if request.url.query else ""
                target = quote(request.url.path + query)
                return RedirectResponse(f"{PREFIX}/login?next={target}", 303)
            if change and viewer.session is not None:
                form = await request.form()
                given = form.get("csrf") or request.headers.get("x-csrf-token")
                auth.check_csrf(
                    viewer.session, given if isinstance(given, str) else None, origin, host
                )
            response = await page(request, viewer)
        except Refused as refused:
            response = PlainTextResponse(refused.reason + "\n", refused.status)
        if new_cookie is not None:
            set_session_cookie(response, new_cookie, secure=state.secure_cookies)
        return response

    return endpoint


def auth_local() -> Principal:
    from pegboard.admin.security import LOCAL

    return LOCAL


def _login_reason(auth: AdminAuth) -> str:
    if auth.open_locally:
        return "refused: missing or wrong CSRF token; reload the page"
    return "log in first: open /admin/login, or send Authorization: Bearer <token>"


async def _viewer(auth: AdminAuth, request: Request) -> Viewer | None:
    bearer = bearer_of(request.headers.get("authorization"))
    if bearer is not None:
        principal = await auth.principal_of_credential(bearer)
        if principal is None:
            raise Refused(401, "the bearer token is not an admin's (see [auth] admins)")
        return Viewer(principal, None)
    session = auth.session_of(request.cookies.get(SESSION_COOKIE))
    if session is None:
        return None
    return Viewer(session.principal, session, auth.csrf_token(session))


def set_session_cookie(response: Response, value: str, *, secure: bool) -> None:
    response.set_cookie(
        SESSION_COOKIE,
        value,
        max_age=SESSION_SECONDS,
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=secure,
    )


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` to every answer and refuses a non-loopback Host or Origin
    on a loopback bind, before any page (static files too)."""

    def __init__(self, app: ASGIApp, auth: AdminAuth) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        extra = [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
        try:
            self.auth.check_host(headers.get("host"), headers.get("origin"))
        except Refused as refused:
            start = {
                "type": "http.response.start",
                "status": refused.status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), *extra],
            }
            await send(start)
            await send({"type": "http.response.body", "body": refused.reason.encode() + b"\n"})
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)


def metrics_page(metrics: GatewayMetrics) -> Page:
    async def page(request: Request, viewer: Viewer) -> Response:
        from starlette.responses import Response

        from pegboard.admin.metrics import CONTENT_TYPE

        return Response(await metrics.exposition(), media_type=CONTENT_TYPE)

    return page


def admin_app(state: AdminState) -> ASGIApp:
    """The admin UI's ASGI app; its routes are under :data:`PREFIX`."""
    from starlette.applications import Starlette
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    from pegboard.admin import pages

    routes: list[Any] = [
        Mount(f"{PREFIX}/static", StaticFiles(packages=[("pegboard.admin", "static")])),
        Route(f"{PREFIX}/login", pages.login_page(state), methods=["GET", "POST"]),
        Route(f"{PREFIX}/logout", pages.logout(state), methods=["POST"]),
    ]
    for path, page, methods in pages.routes(state):
        change = "POST" in methods
        routes.append(
            Route(f"{PREFIX}{path}", guarded(state, page, change=change), methods=methods)
        )
    if state.metrics is not None:
        routes.append(Route(METRICS_PATH, guarded(state, metrics_page(state.metrics), api=True)))
    app: Starlette = Starlette(routes=routes)
    return SecurityHeaders(app, state.auth)

"""The admin pages: each reads or changes one thing through the service layer."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pegboard.admin.app import PREFIX, AdminState, Page, Viewer, set_session_cookie
from pegboard.admin.security import SESSION_COOKIE, Refused
from pegboard.errors import PegboardError
from pegboard.service.audit import AuditQuery

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from pegboard.calls.pending import PendingApproval
    from pegboard.service.approvals import Verdict

VERDICTS: dict[str, Verdict] = {"once": "once", "while": "while", "deny": "deny"}
DECISION_NAMES = {
    "allow_once": "approved once",
    "allow_session": "approved for a while",
    "allow_always": "approved always",
    "deny": "denied",
}
REFRESH_S = 2  # how often the approvals page asks whether new questions wait

NAV = (
    ("overview", "Overview", ""),
    ("servers", "Servers", "/servers"),
    ("tools", "Tools", "/tools"),
    ("approvals", "Approvals", "/approvals"),
    ("audit", "Audit", "/audit"),
    ("sessions", "Clients & sessions", "/sessions"),
    ("config", "Configuration", "/config"),
)

# What a finished action says on the page it returns to: fixed phrases (a link cannot make the
# page say anything else).
NOTICES = {
    "enabled": "Server {id} enabled.",
    "disabled": "Server {id} disabled.",
    "refreshed": "Server {id} refreshed.",
    "refresh-failed": "Server {id} could not be refreshed; see its state below.",
    "trusted": "The definitions of server {id} are trusted now.",
    "approved": "Approved.",
    "denied": "Denied.",
}


def render(
    state: AdminState, request: Request, viewer: Viewer | None, name: str, **context: Any
) -> Response:
    from starlette.responses import HTMLResponse

    notice = NOTICES.get(request.query_params.get("done", ""), "")
    html = state.templates.get_template(f"{name}.html").render(
        prefix=PREFIX,
        nav=NAV,
        page=name,
        viewer=viewer,
        csrf=viewer.csrf if viewer else "",
        notice=notice.format(id=request.query_params.get("id", "")),
        now=time.time(),
        **context,
    )
    return HTMLResponse(html, status_code=context.get("status", 200))


def back(path: str, done: str, server_id: str = "") -> Response:
    from urllib.parse import urlencode

    from starlette.responses import RedirectResponse

    query = urlencode({"done": done, **({"id": server_id} if server_id else {})})
    return RedirectResponse(f"{PREFIX}{path}?{query}", 303)


def routes(state: AdminState) -> list[tuple[str, Page, list[str]]]:
    """Every guarded page: (path under the prefix, page, methods)."""
    service = state.service

    async def overview(request: Request, viewer: Viewer) -> Response:
        statuses = service.servers.statuses()
        return render(
            state,
            request,
            viewer,
            "overview",
            statuses=statuses,
            exposed=len(service.tools.rows(limit=10_000)),
            recent=service.audit.query(AuditQuery(), per_page=10).records,
            pending=await service.approvals.count_pending(),
        )

    async def servers(request: Request, viewer: Viewer) -> Response:
        import anyio.to_thread

        config = service.loaded.config.servers
        views = await anyio.to_thread.run_sync(service.servers.replica_views)
        return render(
            state,
            request,
            viewer,
            "servers",
            statuses=service.servers.statuses(),
            enabled={sid: s.enabled for sid, s in config.items()},
            excluded=service.servers.excluded(),
            # one row per replica per server once several replicas share the team store
            replicas=views if views and len({v.replica for v in views}) > 1 else [],
        )

    def server_action(action: str) -> Page:
        async def act(request: Request, viewer: Viewer) -> Response:
            sid = request.path_params["server_id"]
            if sid not in service.loaded.config.servers:
                raise Refused(404, "no such server")
            if action in ("enable", "disable"):
                await service.servers.set_enabled_now(sid, action == "enable")
                return back("/servers", f"{action}d", sid)
            if action == "trust":
                service.trust.trust_server(sid)
                return back("/servers", "trusted", sid)
            [result] = await service.servers.refresh([sid])
            return back("/servers", "refreshed" if result.ok else "refresh-failed", sid)

        return act

    async def logs(request: Request, viewer: Viewer) -> Response:
        sid = request.path_params["server_id"]
        if sid not in service.loaded.config.servers:
            raise Refused(404, "no such server")
        kept = service.servers.logs(sid)
        text = kept.text if kept is not None else None
        return render(state, request, viewer, "logs", server_id=sid, text=text)

    async def tools(request: Request, viewer: Viewer) -> Response:
        query = request.query_params.get("q", "")[:200]
        return render(
            state,
            request,
            viewer,
            "tools",
            query=query,
            rows=service.tools.rows(query),
            excluded=service.tools.excluded(),
        )

    async def audit(request: Request, viewer: Viewer) -> Response:
        params = request.query_params
        since_hours = _number(params.get("hours"))
        query = AuditQuery(
            tool=params.get("tool", "")[:200],
            outcome=params.get("outcome", "")[:100],
            principal=params.get("principal", "")[:200],
            since=time.time() - since_hours * 3600 if since_hours else None,
        )
        page = service.audit.query(query, page=int(_number(params.get("page")) or 1))
        return render(
            state,
            request,
            viewer,
            "audit",
            query=query,
            hours=params.get("hours", ""),
            result=page,
            link=_page_link(params),
        )

    async def sessions(request: Request, viewer: Viewer) -> Response:
        live = state.sessions() if state.sessions else None
        return render(
            state,
            request,
            viewer,
            "sessions",
            live=live,
            recent=_recent_sessions(service.audit.tail(5000)),
        )

    async def config(request: Request, viewer: Viewer) -> Response:
        import tomli_w

        from pegboard.service.config import config_data

        data = config_data(service.loaded, effective=True)
        return render(
            state,
            request,
            viewer,
            "config",
            path=str(service.loaded.path),
            text=tomli_w.dumps(data),
        )

    async def approvals(request: Request, viewer: Viewer) -> Response:
        listed = await service.approvals.listed()
        return render(
            state,
            request,
            viewer,
            "approvals",
            approvals=listed,
            seen=_seen(listed.pending),
            refresh=REFRESH_S,
        )

    async def pending(request: Request, viewer: Viewer) -> Response:
        """The waiting questions alone (the approvals page polls it): 204, which HTMX does
        not swap, while they are the ones the page shows (``seen``)."""
        from starlette.responses import Response

        waiting = (await service.approvals.listed(history=0)).pending
        seen = _seen(waiting)
        if request.query_params.get("seen") == seen:
            return Response(status_code=204)
        return render(
            state,
            request,
            viewer,
            "approvals_pending",
            pending=waiting,
            seen=seen,
            refresh=REFRESH_S,
        )

    async def one(request: Request, viewer: Viewer) -> Response:
        """One question's page (where a URL-mode elicitation sends the client's user)."""
        item = await service.approvals.find(request.path_params["approval_id"])
        return render(
            state,
            request,
            viewer,
            "approval",
            a=item,
            question=item.status(),
            decisions=DECISION_NAMES,
        )

    async def decide(request: Request, viewer: Viewer) -> Response:
        form = await request.form()
        chosen, reason = form.get("verdict"), form.get("reason")
        verdict = VERDICTS.get(chosen if isinstance(chosen, str) else "")
        if verdict is None:
            raise Refused(400, "choose approve once, approve for a while, or deny")
        decided = await service.approvals.decide(
            request.path_params["approval_id"],
            verdict,
            decided_by=viewer.principal.subject,
            reason=reason if isinstance(reason, str) else "",
        )
        done = "denied" if verdict == "deny" else "approved"
        if form.get("back") == "one":
            return back(f"/approvals/{decided.id}", done)
        return back("/approvals", done)

    listed: list[tuple[str, Page, list[str]]] = [
        ("/approvals", approvals, ["GET"]),
        ("/approvals/pending", pending, ["GET"]),
        ("/approvals/{approval_id}", one, ["GET"]),
        ("/approvals/{approval_id}/decide", decide, ["POST"]),
        ("", overview, ["GET"]),
        ("/", overview, ["GET"]),
        ("/servers", servers, ["GET"]),
        ("/servers/{server_id}/logs", logs, ["GET"]),
        ("/tools", tools, ["GET"]),
        ("/audit", audit, ["GET"]),
        ("/sessions", sessions, ["GET"]),
        ("/config", config, ["GET"]),
    ]
    for action in ("enable", "disable", "refresh", "trust"):
        listed.append((f"/servers/{{server_id}}/{action}", server_action(action), ["POST"]))
    return [(path, _errors_shown(state, page), methods) for path, page, methods in listed]


def _errors_shown(state: AdminState, page: Page) -> Page:
    """A pegboard error (a config that cannot be written, a server id) becomes a page that
    says it in one line, instead of a server error."""

    async def shown(request: Request, viewer: Viewer) -> Response:
        try:
            return await page(request, viewer)
        except PegboardError as exc:
            return render(state, request, viewer, "error", message=str(exc), status=400)

    return shown


def _seen(pending: list[PendingApproval]) -> str:
    """A short digest of which questions wait (the approvals page's ``seen``)."""
    import hashlib

    ids = ",".join(sorted(a.id for a in pending))
    return hashlib.sha256(ids.encode()).hexdigest()[:16]


def _number(text: str | None) -> float:
    try:
        value = float(text or 0)
    except ValueError:
        return 0.0
    return value if 0 < value < 1e7 else 0.0


def _page_link(params: Any) -> Callable[[int], str]:
    from urllib.parse import urlencode

    kept = {k: v for k, v in params.items() if k != "page" and v}

    def link(page: int) -> str:
        return f"{PREFIX}/audit?{urlencode({**kept, 'page': page})}"

    return link


def _recent_sessions(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sessions of the audit's recent records: who, through which routes, how many
    calls, when last; newest first."""
    found: dict[str, dict[str, Any]] = {}
    for record in records:
        sid = str(record.get("session_id") or "-")
        row = found.setdefault(
            sid,
            {
                "session_id": sid,
                "principal": record.get("principal", "anonymous"),
                "client": record.get("client", ""),
                "via": set(),
                "calls": 0,
                "last": 0.0,
            },
        )
        row["via"].add(str(record.get("via", "-")))
        row["calls"] += 1
        stamp = record.get("time")
        if isinstance(stamp, int | float):
            row["last"] = max(row["last"], float(stamp))
    return sorted(found.values(), key=lambda r: -float(r["last"]))


def login_page(state: AdminState) -> Callable[..., Any]:
    """``GET``: the form (or, with ``pegboard ui``'s ``?key=``, the session at once);
    ``POST``: a token in exchange for a session cookie."""
    from starlette.responses import RedirectResponse

    auth = state.auth

    async def login(request: Request) -> Response:
        next_page = request.query_params.get("next", "")
        if not next_page.startswith(f"{PREFIX}") or next_page.startswith("//"):
            next_page = f"{PREFIX}/"
        credential = request.query_params.get("key") if request.method == "GET" else None
        if request.method == "POST":
            origin = request.headers.get("origin")
            if origin is not None and origin.partition("://")[2] != request.headers.get("host"):
                return render(
                    state, request, None, "login", error="Refused: another site.", status=403
                )
            form = await request.form()
            value = form.get("token")
            credential = value.strip() if isinstance(value, str) else None
        if not credential:
            return render(state, request, None, "login", error="", next=next_page)
        principal = await auth.principal_of_credential(credential)
        if principal is None:
            error = "That is not an admin's token (see [auth] admins)."
            return render(state, request, None, "login", error=error, next=next_page, status=401)
        _, cookie = auth.new_session(principal)
        response = RedirectResponse(next_page, 303)
        set_session_cookie(response, cookie, secure=state.secure_cookies)
        return response

    return login


def logout(state: AdminState) -> Callable[..., Any]:
    from starlette.responses import RedirectResponse

    async def out(request: Request) -> Response:
        session = state.auth.session_of(request.cookies.get(SESSION_COOKIE))
        form = await request.form()
        given = form.get("csrf")
        if session is not None:
            try:
                state.auth.check_csrf(
                    session,
                    given if isinstance(given, str) else None,
                    request.headers.get("origin"),
                    request.headers.get("host"),
                )
            except Refused as refused:
                from starlette.responses import PlainTextResponse

                return PlainTextResponse(refused.reason + "\n", refused.status)
        response = RedirectResponse(f"{PREFIX}/login", 303)
        response.delete_cookie(SESSION_COOKIE, path=PREFIX)
        return response

    return out

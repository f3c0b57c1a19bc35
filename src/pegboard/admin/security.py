"""Who may use the admin UI, and the checks every request passes.

The admin UI takes the gateway's authentication:

- ``[gateway] token`` (or ``PEGBOARD_TOKEN``): ``Authorization: Bearer <token>``, or a browser
  session opened by posting the token to the login page;
- ``[auth] issuer``: an access token whose principal ``[auth] admins`` names (a subject or
  ``group:NAME``), as a bearer header or posted to the login page;
- neither: only on a loopback bind, for the local user.

``pegboard ui`` adds a one-time key in the URL it opens (:attr:`AdminAuth.login_key`), so another
local user's browser cannot walk in. On a loopback bind the Host and Origin must be loopback
spellings (a DNS-rebound page names another host). A browser session is a signed cookie (no
secret in it); every state change carries that session's CSRF token and, when the browser sends
one, a same-origin ``Origin``. Every answer carries a CSP without inline script.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field

from pegboard.core.principal import Principal

SESSION_COOKIE = "pegboard_admin"
SESSION_SECONDS = 8 * 3600
LOCAL = Principal("local-user")

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",  # no-referrer would make form posts say Origin: null
    "cache-control": "no-store",
    "cross-origin-opener-policy": "same-origin",
}

_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})


TokenCheck = Callable[[str], Awaitable[Principal | None]]
"""Turns a presented access token into its principal (None: not a valid token)."""


class Refused(Exception):
    """A request the admin UI does not serve: ``status`` and a one-line reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Session:
    """A browser's admin session: who, until when, and its id (the CSRF token's seed)."""

    principal: Principal
    sid: str
    expires: float


@dataclass
class AdminAuth:
    """How the admin UI authenticates (see the module docstring).

    ``token``: the gateway's static token; ``verify``: the OAuth resource server's check of an
    access token; ``admins``: who among its principals may enter; ``loopback``: the bind is a
    loopback address (Host/Origin must then be loopback spellings); ``login_key``: the one-time
    key of ``pegboard ui``.
    """

    token: str | None = None
    verify: TokenCheck | None = None
    admins: Collection[str] = ()
    loopback: bool = True
    login_key: str | None = None
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    @property
    def open_locally(self) -> bool:
        """No credential at all: the local user of a loopback bind."""
        return self.token is None and self.verify is None and self.login_key is None

    def check_host(self, host: str | None, origin: str | None) -> None:
        """On a loopback bind, refuse (421/403) a Host or Origin that is not loopback."""
        if not self.loopback:
            return
        if not host or _hostname(host) not in _LOOPBACK_NAMES:
            raise Refused(421, "refused: the Host header is not a loopback address")
        if origin is not None and origin != "null":
            scheme, _, rest = origin.partition("://")
            if scheme not in ("http", "https") or _hostname(rest) not in _LOOPBACK_NAMES:
                raise Refused(403, "refused: the Origin is not this admin page")

    async def principal_of_credential(self, credential: str) -> Principal | None:
        """The admin a presented token or login key stands for (None: not one)."""
        given = credential.encode()
        if self.login_key is not None and hmac.compare_digest(given, self.login_key.encode()):
            return LOCAL
        if self.token is not None:
            return LOCAL if hmac.compare_digest(given, self.token.encode()) else None
        if self.verify is not None:
            principal = await self.verify(credential)
            return principal if principal is not None and self.is_admin(principal) else None
        return None

    def is_admin(self, principal: Principal) -> bool:
        names = {principal.subject, *(f"group:{g}" for g in principal.groups)}
        return bool(names & set(self.admins))

    # -- sessions --------------------------------------------------------------------------

    def new_session(self, principal: Principal) -> tuple[Session, str]:
        """A fresh session for ``principal`` and its cookie value."""
        session = Session(principal, secrets.token_urlsafe(16), time.time() + SESSION_SECONDS)
        body = json.dumps(
            {
                "s": principal.subject,
                "g": sorted(principal.groups),
                "i": session.sid,
                "e": int(session.expires),
            },
            separators=(",", ":"),
        ).encode()
        encoded = base64.urlsafe_b64encode(body).decode().rstrip("=")
        return session, f"{encoded}.{self._sign(encoded)}"

    def session_of(self, cookie: str | None) -> Session | None:
        """The session a cookie carries, if its signature holds and it has not expired."""
        if not cookie or "." not in cookie:
            return None
        encoded, _, signature = cookie.rpartition(".")
        if not hmac.compare_digest(signature, self._sign(encoded)):
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
            principal = Principal(str(data["s"]), frozenset(str(g) for g in data["g"]))
            session = Session(principal, str(data["i"]), float(data["e"]))
        except (ValueError, KeyError, TypeError):
            return None
        return session if session.expires > time.time() else None

    def csrf_token(self, session: Session) -> str:
        return self._sign("csrf:" + session.sid)

    def check_csrf(
        self, session: Session, given: str | None, origin: str | None, host: str | None
    ) -> None:
        """Refuse (403) a state change without this session's CSRF token, or sent by a page
        of another origin."""
        if origin is not None and (origin == "null" or origin.partition("://")[2] != host):
            raise Refused(403, "refused: the request came from another site (Origin)")
        if not given or not hmac.compare_digest(given, self.csrf_token(session)):
            raise Refused(403, "refused: missing or wrong CSRF token; reload the page")

    def _sign(self, text: str) -> str:
        digest = hmac.new(self.key, text.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _hostname(host: str) -> str:
    """``host`` without its port (``[::1]:8080`` -> ``[::1]``)."""
    if host.startswith("["):
        return host.partition("]")[0] + "]"
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def bearer_of(authorization: str | None) -> str | None:
    if authorization and authorization[:7].lower() == "bearer ":
        return authorization[7:].strip() or None
    return None

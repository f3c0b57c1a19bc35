"""Who an MCP request comes from: the one :func:`principal_of` of ``pegboard serve``.

- stdio: :data:`STDIO`, the user who started ``pegboard serve`` (no groups; access rules do
  not apply to it: it runs its own config);
- HTTP under ``[auth]``: the OAuth identity the resource server verified, its subject (the
  token's ``sub``) and groups (the ``[auth] groups_claim`` claim);
- HTTP with the static ``[gateway] token``: ``bearer:<digest>`` (a digest of the token, never
  the token);
- HTTP on loopback without a token: :data:`~pegboard.core.principal.ANONYMOUS`.

Access rules (``[[auth.allow]]``), rate limits, grants, pending approvals and audit records
all key on it.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pegboard.core.principal import ANONYMOUS, Principal

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.context import ServerRequestContext

STDIO = Principal("stdio")
GROUPS_KEY = "groups"
"""Where :class:`~pegboard.gateway.oauth.JwtVerifier` keeps a token's groups in its claims
(read from the configured ``groups_claim``)."""


def token_principal(token: AccessToken | None) -> Principal | None:
    """The principal of an access token verified by the resource server (None: no token)."""
    if token is None or not token.subject:
        return None
    groups = (token.claims or {}).get(GROUPS_KEY) or ()
    return Principal(token.subject, frozenset(str(g) for g in groups))


def principal_of(ctx: ServerRequestContext[Any, Any]) -> Principal:
    """The principal of one request (see the module docstring)."""
    request = ctx.request
    if request is None:
        return STDIO
    return principal_of_scope(request.scope)


@functools.cache
def _access_token_reader() -> Callable[[], AccessToken | None]:
    """The SDK's reader of the request's verified token, imported once (an import statement
    per request runs importlib's from-list handling)."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    return get_access_token


def principal_of_scope(scope: Mapping[str, Any]) -> Principal:
    """The principal of the HTTP request of ASGI ``scope``."""
    verified = token_principal(getattr(scope.get("user"), "access_token", None))
    if verified is None:
        verified = token_principal(_access_token_reader()())
    if verified is not None:
        return verified
    given = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), b"")
    if not given:
        return ANONYMOUS
    # digested as the str Starlette decodes it (latin-1), encoded UTF-8, as it always was
    digest = hashlib.sha256(given.decode("latin-1").encode()).hexdigest()
    return Principal("bearer:" + digest[:16])


HTTP_SCOPE: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar(
    "pegboard_http_scope", default=None
)
"""The ASGI scope of the 2026-07-28 HTTP request being checked, for what the SDK asks before
any handler runs (:class:`~pegboard.gateway.server.InputSchemas`)."""

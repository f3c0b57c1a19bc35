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

import hashlib
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
    user = request.scope.get("user")
    verified = token_principal(getattr(user, "access_token", None))
    if verified is None:
        from mcp.server.auth.middleware.auth_context import get_access_token

        verified = token_principal(get_access_token())
    if verified is not None:
        return verified
    given = request.headers.get("authorization")
    if not given:
        return ANONYMOUS
    return Principal("bearer:" + hashlib.sha256(given.encode()).hexdigest()[:16])

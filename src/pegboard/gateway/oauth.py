"""The gateway as an OAuth 2.1 resource server: JWT access tokens checked with the issuer's JWKS.

``[auth] issuer`` names the authorization server; its metadata (RFC 8414, else OpenID Connect
discovery) gives the JWKS address. Keys are fetched at start (a failure is a one-line error),
kept, and fetched again when a token names an unknown ``kid`` (at most once per
:data:`KID_REFRESH_INTERVAL_S`, so a flood of made-up kids cannot hammer the issuer); when the
issuer is down later, the keys already fetched keep working.

Only asymmetric algorithms are accepted (:data:`ALLOWED_ALGORITHMS`): never ``none``, never an
HMAC, so a token "signed" with the published public key as an HMAC secret is refused. ``iss``,
``aud``, ``exp`` and ``sub`` are required; ``exp`` / ``nbf`` get a small leeway. The verifier
returns ``None`` for any bad token (the SDK's middleware answers 401 with
``WWW-Authenticate: Bearer ... resource_metadata="..."``); the token itself is never logged.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
import jwt

from pegboard.core.redact import redact_url
from pegboard.errors import ConfigError
from pegboard.gateway.identity import GROUPS_KEY

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken

    from pegboard.config.model import AuthConfig

logger = logging.getLogger("pegboard.gateway.oauth")

ALLOWED_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
_ASYMMETRIC_KEY_TYPES = frozenset({"RSA", "EC", "OKP"})
MAX_TOKEN_BYTES = 8192
MAX_DOCUMENT_BYTES = 512 * 1024
KID_REFRESH_INTERVAL_S = 30.0
FETCH_TIMEOUT_S = 10.0


def metadata_addresses(issuer: str) -> list[str]:
    """Where an issuer publishes its metadata: RFC 8414 first, then OpenID Connect discovery."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    rfc8414 = urlunsplit(
        (parts.scheme, parts.netloc, f"/.well-known/oauth-authorization-server{path}", "", "")
    )
    oidc = urlunsplit(
        (parts.scheme, parts.netloc, f"{path}/.well-known/openid-configuration", "", "")
    )
    return [rfc8414, oidc]


class JwtVerifier:
    """The SDK's ``TokenVerifier`` for JWT access tokens of one issuer and one audience."""

    def __init__(self, auth: AuthConfig, *, client: httpx2.AsyncClient | None = None) -> None:
        if auth.issuer is None or auth.audience is None:
            raise ConfigError("[auth] needs both issuer and audience")
        self.issuer = auth.issuer
        self.audience = auth.audience
        self._groups_claim = auth.groups_claim
        self._leeway = auth.leeway
        self._client = client
        self._jwks_uri: str | None = None
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._last_fetch = float("-inf")
        self._fetch_lock = anyio.Lock()

    async def start(self) -> None:
        """Discover the issuer and fetch its keys; ConfigError (one line) when that fails."""
        shown = redact_url(self.issuer)
        try:
            meta = await self._discover()
            self._jwks_uri = _https_or_loopback(meta.get("jwks_uri"), "jwks_uri")
            await self._fetch_keys()
        except (httpx2.HTTPError, ValueError, OSError) as exc:
            raise ConfigError(
                f"[auth] issuer {shown}: cannot read its metadata or keys ({_reason(exc)}); "
                "check the URL and that the issuer is reachable"
            ) from None
        if not self._keys:
            raise ConfigError(f"[auth] issuer {shown}: its JWKS holds no usable signing key")

    async def verify_token(self, token: str) -> AccessToken | None:
        from mcp.server.auth.provider import AccessToken

        claims = await self._claims(token)
        if claims is None:
            return None
        scope = claims.get("scope")
        scopes = scope.split() if isinstance(scope, str) else []
        client_id = claims.get("client_id") or claims.get("azp") or claims["sub"]
        kept = {"iss": claims["iss"], GROUPS_KEY: _groups(claims.get(self._groups_claim))}
        return AccessToken(
            token=token,
            client_id=str(client_id),
            scopes=scopes,
            expires_at=int(claims["exp"]),
            resource=self.audience,
            subject=str(claims["sub"]),
            claims=kept,
        )

    async def _claims(self, token: str) -> dict[str, Any] | None:
        if len(token) > MAX_TOKEN_BYTES:
            logger.info(
                "refused an access token of %d bytes (limit %d)", len(token), MAX_TOKEN_BYTES
            )
            return None
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None
        alg = header.get("alg")
        if alg not in ALLOWED_ALGORITHMS:
            logger.info("refused an access token with algorithm %r", alg)
            return None
        key = await self._key(header.get("kid"))
        if key is None:
            logger.info("refused an access token signed with an unknown key")
            return None
        if _jwk_alg(key) not in (None, alg):
            logger.info("refused an access token whose algorithm is not its key's")
            return None
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self._leeway,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as exc:
            logger.info("refused an access token: %s", type(exc).__name__)
            return None
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            return None
        return claims

    async def _key(self, kid: object) -> jwt.PyJWK | None:
        if not (kid is None or isinstance(kid, str)):
            return None
        if kid in self._keys:
            return self._keys[kid]
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        async with self._fetch_lock:
            if (
                kid not in self._keys
                and time.monotonic() - self._last_fetch >= KID_REFRESH_INTERVAL_S
            ):
                try:
                    await self._fetch_keys()
                except (httpx2.HTTPError, ValueError, OSError) as exc:
                    # The issuer being down must not lock everyone out: cached keys keep working.
                    logger.warning("could not refresh the issuer's keys: %s", _reason(exc))
        return self._keys.get(kid)

    async def _discover(self) -> dict[str, Any]:
        last: Exception | None = None
        for address in metadata_addresses(self.issuer):
            try:
                meta = await self._get_json(address)
            except (httpx2.HTTPError, ValueError) as exc:
                last = exc
                continue
            if meta.get("issuer") != self.issuer:
                raise ValueError(
                    f"the metadata names issuer {meta.get('issuer')!r}, not the configured one"
                )
            return meta
        assert last is not None
        raise last

    async def _fetch_keys(self) -> None:
        self._last_fetch = time.monotonic()
        assert self._jwks_uri is not None
        document = await self._get_json(self._jwks_uri)
        keys: dict[str | None, jwt.PyJWK] = {}
        for entry in document.get("keys") or []:
            if not isinstance(entry, dict) or entry.get("kty") not in _ASYMMETRIC_KEY_TYPES:
                continue  # an HMAC ("oct") key would let a token be forged with it
            if entry.get("use", "sig") != "sig" or "d" in entry:
                continue
            try:
                key = jwt.PyJWK(entry)
            except jwt.PyJWTError:
                continue
            keys[entry.get("kid")] = key
        if not keys and not self._keys:
            raise ValueError("no usable signing key in the JWKS")
        if keys:
            self._keys = keys

    async def _get_json(self, address: str) -> dict[str, Any]:
        client = self._client or httpx2.AsyncClient(timeout=FETCH_TIMEOUT_S, trust_env=False)
        try:
            async with client.stream(
                "GET", address, headers={"accept": "application/json"}
            ) as reply:
                if reply.status_code != 200:
                    raise ValueError(f"HTTP {reply.status_code} from {redact_url(address)}")
                body = bytearray()
                async for chunk in reply.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_DOCUMENT_BYTES:
                        raise ValueError(f"{redact_url(address)} answered more than 512 KiB")
        finally:
            if self._client is None:
                await client.aclose()
        document = json.loads(body)
        if not isinstance(document, dict):
            raise ValueError(f"{redact_url(address)} did not answer a JSON object")
        return document


def _jwk_alg(key: jwt.PyJWK) -> str | None:
    alg = getattr(key, "_jwk_data", {}).get("alg")
    return alg if isinstance(alg, str) else None


def _groups(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int)]
    return []


def _https_or_loopback(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        raise ValueError(f"the issuer's metadata has no usable {what}")
    return value


def _reason(exc: BaseException) -> str:
    if isinstance(exc, httpx2.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx2.ConnectError | OSError):
        return "connection refused or unreachable"
    if isinstance(exc, json.JSONDecodeError):
        return "not JSON"
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__

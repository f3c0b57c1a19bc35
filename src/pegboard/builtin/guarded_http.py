"""An HTTP client for model-chosen URLs: checked at dial time, capped in size and time.

The check lives in the network backend that httpcore dials through, so the address that is
checked is the address connected to: the host is resolved once, every answer is checked, and
the socket opens to a checked address (a second DNS answer, as in rebinding, is never asked
for). TLS still verifies the certificate against the host name, since httpcore passes the URL's
host as SNI. Redirects are followed by hand so that each hop's URL is checked and reported.
"""

from __future__ import annotations

import functools
import socket
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import anyio
import httpcore2
import httpx2

from pegboard.builtin.address_policy import METADATA_HOSTS, AddressPolicy
from pegboard.errors import ToolExecutionError, UrlRefused

MAX_REDIRECTS = 5
_SENSITIVE = frozenset({"authorization", "cookie", "proxy-authorization"})
_USER_AGENT = "pegboard-web-fetch/0.1"


@dataclass(frozen=True, slots=True)
class FetchedBody:
    """A successful response: the final URL, its media type and the decoded body."""

    url: str
    status: int
    content_type: str
    charset: str | None
    body: bytes


class GuardedBackend(httpcore2.AsyncNetworkBackend):
    """Resolve once, refuse the host if any answer is refused, connect to a checked answer."""

    def __init__(self, policy: AddressPolicy) -> None:
        self._policy = policy
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's backend interface)
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise ToolExecutionError(f"could not resolve {host}: {exc}") from exc
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        self._policy.check_addresses(host, addresses)
        error: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                error = exc
        assert error is not None  # getaddrinfo never answers an empty list
        raise error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's backend interface)
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise UrlRefused("web_fetch does not connect to Unix sockets")

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


@functools.cache
def _default_ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle costs more than a fetch to a nearby host; build it once.
    return httpx2.create_ssl_context(trust_env=False)


def guarded_client(
    policy: AddressPolicy, ssl_context: ssl.SSLContext | None = None
) -> httpx2.AsyncClient:
    """A client whose every connection goes through :class:`GuardedBackend`, with no proxy.

    ``ssl_context`` replaces the default trust store (certifi), e.g. for a private CA.
    """
    transport = httpx2.AsyncHTTPTransport(trust_env=False, retries=0)
    # httpx2 takes no network backend argument; its pool is replaced with one that has ours.
    transport._pool = httpcore2.AsyncConnectionPool(
        ssl_context=ssl_context or _default_ssl_context(),
        network_backend=GuardedBackend(policy),
    )
    return httpx2.AsyncClient(
        transport=transport,
        trust_env=False,
        follow_redirects=False,
        headers={"User-Agent": _USER_AGENT},
    )


def check_url(raw: str | httpx2.URL) -> httpx2.URL:
    """Parse ``raw`` and refuse what no address check can make safe."""
    try:
        url = raw if isinstance(raw, httpx2.URL) else httpx2.URL(raw)
    except (httpx2.InvalidURL, TypeError) as exc:
        raise UrlRefused(f"{raw!s} is not a valid URL: {exc}") from exc
    if url.scheme not in ("http", "https"):
        shown = f"{url.scheme}:" if url.scheme else "no scheme"
        raise UrlRefused(f"only http and https URLs can be fetched, not {shown} ({raw!s})")
    if url.userinfo:
        raise UrlRefused("URLs with a user name or password (user@host) are refused")
    host = url.host.rstrip(".").lower()
    if not host:
        raise UrlRefused(f"{raw!s} has no host")
    if host in METADATA_HOSTS:
        raise UrlRefused(f"{host} is a cloud metadata host; web_fetch never reaches it")
    return url


async def fetch(
    url: str,
    policy: AddressPolicy,
    *,
    max_bytes: int,
    deadline: float,
    headers: Mapping[str, str] | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> FetchedBody:
    """GET ``url`` within ``deadline`` seconds overall, following at most 5 checked redirects.

    Raises :class:`UrlRefused` for a refused URL or hop and :class:`ToolExecutionError` for
    HTTP errors, oversized bodies, timeouts and network failures; cancellation propagates.
    """
    try:
        with anyio.fail_after(deadline):
            async with guarded_client(policy, ssl_context) as client:
                return await _follow(client, check_url(url), dict(headers or {}), max_bytes)
    except TimeoutError:
        raise ToolExecutionError(
            f"fetching {url} did not finish within {deadline:g} s ([web_fetch] timeout)"
        ) from None
    except httpx2.HTTPError as exc:
        raise ToolExecutionError(f"could not fetch {url}: {type(exc).__name__}: {exc}") from exc


async def _follow(
    client: httpx2.AsyncClient, url: httpx2.URL, headers: dict[str, str], max_bytes: int
) -> FetchedBody:
    for hop in range(MAX_REDIRECTS + 1):
        request = client.build_request("GET", url, headers=headers)
        try:
            response = await client.send(request, stream=True)
        except UrlRefused as exc:
            if hop == 0:
                raise
            raise UrlRefused(f"redirect {hop} to {url} refused: {exc}") from None
        try:
            client.cookies.clear()  # no cookie carries over from one hop to the next
            if response.is_redirect:
                if hop == MAX_REDIRECTS:
                    raise ToolExecutionError(
                        f"{url} redirected more than {MAX_REDIRECTS} times; giving up"
                    )
                target = url.join(response.headers["location"])
                try:
                    target = check_url(target)
                except UrlRefused as exc:
                    raise UrlRefused(f"redirect {hop + 1} to {target} refused: {exc}") from None
                if _origin(target) != _origin(url):
                    headers = {k: v for k, v in headers.items() if k.lower() not in _SENSITIVE}
                url = target
                continue
            return await _read(response, url, max_bytes)
        finally:
            await response.aclose()
    raise AssertionError("unreachable: the loop returns or raises")


async def _read(response: httpx2.Response, url: httpx2.URL, max_bytes: int) -> FetchedBody:
    if response.status_code >= 400:
        raise ToolExecutionError(
            f"{url} answered HTTP {response.status_code} {response.reason_phrase}"
        )
    limit = _mb(max_bytes)
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise ToolExecutionError(
            f"{url} is {_mb(int(declared))}, over the {limit} limit ([web_fetch] max_bytes)"
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise ToolExecutionError(
                f"{url} decodes to more than the {limit} limit ([web_fetch] max_bytes); "
                "stopped reading"
            )
        chunks.append(chunk)
    media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    return FetchedBody(
        url=str(url),
        status=response.status_code,
        content_type=media_type,
        charset=response.charset_encoding,
        body=b"".join(chunks),
    )


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    return (url.scheme, url.host, url.port)


def _mb(size: int) -> str:
    return f"{size / 1_000_000:g} MB"

"""Web-search providers over HTTP: SearXNG (JSON API), Brave Search API, Tavily.

Each failure (HTTP error, rate limit, timeout, unreadable answer) becomes a
:class:`ToolExecutionError` naming the provider and what to do; the API key is replaced by
``***`` in anything built from a provider's answer.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import httpx2

from pegboard.builtin.web_search import SearchResult, WebSearchProvider
from pegboard.config.model import WebSearchProviderConfig
from pegboard.errors import ToolExecutionError


class _HttpProvider(ABC):
    kind = ""
    default_base = ""

    def __init__(self, name: str, settings: WebSearchProviderConfig, key: str | None) -> None:
        self.name = name
        self._base = (settings.url or self.default_base).rstrip("/")
        self._key = key
        self._timeout = settings.timeout

    async def search(self, query: str, max_results: int) -> list[SearchResult]:
        try:
            with anyio.fail_after(self._timeout):
                async with httpx2.AsyncClient(timeout=self._timeout) as client:
                    response = await self._request(client, query, max_results)
                    await response.aread()
        except TimeoutError:
            raise self._error(
                f"did not answer within {self._timeout:g} s; try again or use another provider"
            ) from None
        except httpx2.HTTPError as exc:
            raise self._error(f"could not be reached: {type(exc).__name__}: {exc}") from None
        if response.status_code == 429:
            wait = response.headers.get("retry-after")
            hint = f"wait {wait} s" if wait else "wait"
            raise self._error(f"is rate-limited (HTTP 429); {hint} before searching again")
        if response.status_code >= 400:
            raise self._error(f"answered HTTP {response.status_code}: {self._detail(response)}")
        try:
            data = response.json()
            return [SearchResult(*row) for row in self._rows(data)][:max_results]
        except (ValueError, TypeError, KeyError, AttributeError):
            raise self._error("answered with JSON of an unexpected shape") from None

    @abstractmethod
    async def _request(
        self, client: httpx2.AsyncClient, query: str, max_results: int
    ) -> httpx2.Response:
        """Send the provider's search request."""

    @abstractmethod
    def _rows(self, data: Any) -> list[tuple[str, str, str]]:
        """(title, url, content) rows of the provider's JSON answer."""

    def _detail(self, response: httpx2.Response) -> str:
        try:
            data = response.json()
        except ValueError:
            return self._redact(response.text[:200].strip() or response.reason_phrase)
        return self._redact(str(_find_message(data) or response.reason_phrase)[:300])

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    def _error(self, what: str) -> ToolExecutionError:
        return ToolExecutionError(
            self._redact(f"web_search provider {self.name!r} ({self.kind}) {what}"),
            tool_name="web_search",
        )


def _find_message(data: Any) -> Any:
    """Brave: ``{"error": {"detail": ...}}``; Tavily: ``{"detail": {"error": ...}}``."""
    if isinstance(data, Mapping):
        for key in ("detail", "error", "message"):
            value = data.get(key)
            if isinstance(value, Mapping):
                return _find_message(value) or value
            if value:
                return value
    return None


class SearxngProvider(_HttpProvider):
    """SearXNG's ``/search?format=json`` (the instance must enable the json format)."""

    kind = "searxng"

    async def _request(
        self, client: httpx2.AsyncClient, query: str, max_results: int
    ) -> httpx2.Response:
        params = {"q": query, "format": "json"}
        return await client.get(f"{self._base}/search", params=params)

    def _rows(self, data: Any) -> list[tuple[str, str, str]]:
        return [(r["title"], r["url"], r.get("content") or "") for r in data["results"]]


class BraveProvider(_HttpProvider):
    """Brave Search API, ``/res/v1/web/search`` with the ``X-Subscription-Token`` header."""

    kind = "brave"
    default_base = "https://api.search.brave.com"

    async def _request(
        self, client: httpx2.AsyncClient, query: str, max_results: int
    ) -> httpx2.Response:
        headers = {"Accept": "application/json", "X-Subscription-Token": self._key or ""}
        params = {"q": query, "count": str(max_results)}
        return await client.get(f"{self._base}/res/v1/web/search", params=params, headers=headers)

    def _rows(self, data: Any) -> list[tuple[str, str, str]]:
        web = data.get("web") or {"results": []}  # no "web" key: nothing found
        return [(r["title"], r["url"], r.get("description") or "") for r in web["results"]]


class TavilyProvider(_HttpProvider):
    """Tavily ``POST /search`` with a bearer key."""

    kind = "tavily"
    default_base = "https://api.tavily.com"

    async def _request(
        self, client: httpx2.AsyncClient, query: str, max_results: int
    ) -> httpx2.Response:
        body = {"query": query, "max_results": max_results, "search_depth": "basic"}
        headers = {"Authorization": f"Bearer {self._key or ''}"}
        return await client.post(f"{self._base}/search", json=body, headers=headers)

    def _rows(self, data: Any) -> list[tuple[str, str, str]]:
        return [(r["title"], r["url"], r.get("content") or "") for r in data["results"]]


HTTP_PROVIDERS: Mapping[
    str, Callable[[str, WebSearchProviderConfig, str | None], WebSearchProvider]
] = {
    "searxng": SearxngProvider,
    "brave": BraveProvider,
    "tavily": TavilyProvider,
}

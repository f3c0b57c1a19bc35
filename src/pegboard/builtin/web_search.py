"""``web_search``: the provider interface, provider choice and the model-facing results."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only on 3.12+

from pegboard.config.model import PegboardConfig, WebSearchProviderConfig
from pegboard.errors import ToolExecutionError

DEFAULT_MAX_RESULTS = 5
MAX_RESULTS_LIMIT = 20


@dataclass(frozen=True, slots=True)
class SearchResult:
    title: str
    url: str
    content: str


class SearchHit(TypedDict):
    """One numbered result as the model sees it."""

    id: int
    title: str
    url: str
    content: str


class WebSearchProvider(Protocol):
    """A search backend. ``search`` raises :class:`ToolExecutionError` on any failure, so an
    empty list always means the provider found nothing."""

    name: str

    async def search(self, query: str, max_results: int) -> list[SearchResult]: ...


def provider_for(config: PegboardConfig, name: str | None = None) -> WebSearchProvider:
    """The provider ``name``; else the first ``[web_search.<id>]``; else key-less ddgs."""
    if name is None:
        if not config.web_search:
            from pegboard.builtin.ddgs_provider import DdgsProvider

            return DdgsProvider("ddgs")
        name = next(iter(config.web_search))
    settings = config.web_search.get(name)
    if settings is None:
        known = ", ".join(sorted(config.web_search)) or "none"
        raise ToolExecutionError(f"no web_search provider named {name!r} (configured: {known})")
    return build_provider(name, settings)


def build_provider(name: str, settings: WebSearchProviderConfig) -> WebSearchProvider:
    """The provider a ``[web_search.<name>]`` table describes."""
    if settings.type == "ddgs":
        from pegboard.builtin.ddgs_provider import DdgsProvider

        return DdgsProvider(name, timeout=settings.timeout)
    from pegboard.builtin.search_providers import HTTP_PROVIDERS

    return HTTP_PROVIDERS[settings.type](name, settings, api_key(name, settings))


def api_key(name: str, settings: WebSearchProviderConfig) -> str | None:
    """The key from ``api_key_env`` (preferred) or ``api_key``; the error names only the
    variable, never a value."""
    if settings.api_key_env:
        value = os.environ.get(settings.api_key_env, "")
        if not value:
            raise ToolExecutionError(
                f"web_search provider {name!r} needs an API key: set the environment variable "
                f"{settings.api_key_env}"
            )
        return value
    if settings.api_key:
        return settings.api_key
    if settings.type in ("brave", "tavily"):
        raise ToolExecutionError(
            f"web_search provider {name!r} ({settings.type}) needs an API key: set api_key_env "
            f"in [web_search.{name}]"
        )
    return None


async def web_search(
    provider: WebSearchProvider, query: str, max_results: int = DEFAULT_MAX_RESULTS
) -> list[SearchHit]:
    """Search and number the results from 1: ``{id, title, url, content}``."""
    if not query.strip():
        raise ToolExecutionError("web_search needs a non-empty query")
    count = max(1, min(max_results, MAX_RESULTS_LIMIT))
    results = await provider.search(query, count)
    return [
        SearchHit(id=i, title=r.title, url=r.url, content=r.content)
        for i, r in enumerate(results[:count], 1)
    ]

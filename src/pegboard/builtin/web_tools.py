"""The ``web`` tool entries: ``web_search`` and ``web_fetch``, gated on the profile."""

from __future__ import annotations

import pathlib
from typing import Annotated, Any

from pydantic import Field

from pegboard.builtin.web_fetch import DEFAULT_MAX_CHARS, MAX_CHARS_LIMIT, web_fetch
from pegboard.builtin.web_search import (
    DEFAULT_MAX_RESULTS,
    MAX_RESULTS_LIMIT,
    SearchHit,
    provider_for,
    web_search,
)
from pegboard.config.model import PegboardConfig
from pegboard.core.entry import ToolEntry
from pegboard.core.scope import ToolApplyScope
from pegboard.core.tool import Tool, ToolContext


def _web_enabled(scope: ToolApplyScope) -> bool:
    return scope.assistant.enable_web_search


def web_entries(config: PegboardConfig, data_dir: pathlib.Path) -> list[ToolEntry]:
    """The ``pegboard.tools`` entry point of pegboard itself (``data_dir`` is unused)."""

    async def search(
        query: str,
        ctx: ToolContext,
        max_results: Annotated[int, Field(ge=1, le=MAX_RESULTS_LIMIT)] = DEFAULT_MAX_RESULTS,
    ) -> list[SearchHit]:
        """Search the web. Returns results {id, title, url, content}, best first; read one in
        full with web_fetch.

        Args:
            query: What to search for.
            max_results: How many results to return.
        """
        # A call without a scope (e.g. a bare CLI call) uses the default profile's provider.
        settings = ctx.scope.assistant if ctx.scope else config.profile().to_settings()
        provider = provider_for(config, settings.web_search_provider)
        return await web_search(provider, query, max_results)

    async def fetch(
        url: str,
        max_chars: Annotated[int, Field(ge=100, le=MAX_CHARS_LIMIT)] = DEFAULT_MAX_CHARS,
    ) -> str:
        """Fetch a public http(s) URL and return its readable text (HTML as Markdown, text,
        JSON, PDF). Long pages are truncated and marked.

        Args:
            url: The http or https URL.
            max_chars: Characters of text to return at most.
        """
        return await web_fetch(url, max_chars, config=config.web_fetch)

    return [
        _entry("web_search", Tool.from_function(search, annotations=_hints("Web search"))),
        _entry("web_fetch", Tool.from_function(fetch, annotations=_hints("Web fetch"))),
    ]


def _hints(title: str) -> dict[str, Any]:
    return {"title": title, "readOnlyHint": True, "openWorldHint": True}


def _entry(name: str, tool: Tool) -> ToolEntry:
    return ToolEntry(name=name, namespace="web", tool=tool, applies=_web_enabled)

"""The ``web`` tool entries: ``web_search`` and ``web_fetch``, gated on the profile."""

from __future__ import annotations

import pathlib
from typing import Any

from pegboard.builtin.web_fetch import DEFAULT_MAX_CHARS, MAX_CHARS_LIMIT, web_fetch
from pegboard.builtin.web_search import (
    DEFAULT_MAX_RESULTS,
    MAX_RESULTS_LIMIT,
    provider_for,
    web_search,
)
from pegboard.config.model import PegboardConfig
from pegboard.core.entry import ToolEntry
from pegboard.core.scope import ToolApplyScope
from pegboard.core.tool import Tool, ToolContext

_READ_ONLY_OPEN_WORLD = {"readOnlyHint": True, "openWorldHint": True}


def _web_enabled(scope: ToolApplyScope) -> bool:
    return scope.assistant.enable_web_search


def web_entries(config: PegboardConfig, data_dir: pathlib.Path) -> list[ToolEntry]:
    """The ``pegboard.tools`` entry point of pegboard itself (``data_dir`` is unused)."""

    async def run_search(args: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        # A call without a scope (e.g. a bare CLI call) uses the default profile's provider.
        settings = ctx.scope.assistant if ctx.scope else config.profile().to_settings()
        provider = provider_for(config, settings.web_search_provider)
        return await web_search(
            provider, args["query"], args.get("max_results", DEFAULT_MAX_RESULTS)
        )

    async def run_fetch(args: dict[str, Any], ctx: ToolContext) -> str:
        max_chars = args.get("max_chars", DEFAULT_MAX_CHARS)
        return await web_fetch(args["url"], max_chars, config=config.web_fetch)

    search = Tool(
        description="Search the web. Returns results {id, title, url, content}, best first; "
        "read a result in full with web_fetch.",
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to search for."},
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_RESULTS_LIMIT,
                    "default": DEFAULT_MAX_RESULTS,
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        execute=run_search,
        annotations={"title": "Web search", **_READ_ONLY_OPEN_WORLD},
    )
    fetch = Tool(
        description="Fetch a public http(s) URL and return its readable text (HTML as "
        "Markdown, text, JSON, PDF). Long pages are truncated and marked.",
        input_schema={
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The http or https URL."},
                "max_chars": {
                    "type": "integer",
                    "minimum": 100,
                    "maximum": MAX_CHARS_LIMIT,
                    "default": DEFAULT_MAX_CHARS,
                },
            },
            "required": ["url"],
            "additionalProperties": False,
        },
        execute=run_fetch,
        annotations={"title": "Web fetch", **_READ_ONLY_OPEN_WORLD},
    )
    return [
        ToolEntry(name="web_search", namespace="web", tool=search, applies=_web_enabled),
        ToolEntry(name="web_fetch", namespace="web", tool=fetch, applies=_web_enabled),
    ]

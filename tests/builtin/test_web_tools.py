"""The web tool entries: names, namespace, gating, annotations and a call through Tool.run."""

from __future__ import annotations

import pathlib

import pytest

from pegboard.builtin.web_tools import web_entries
from pegboard.config.model import PegboardConfig
from pegboard.core.scope import AssistantSettings, ToolApplyScope
from pegboard.core.tool import ToolContext
from tests.builtin.local_http import LocalServer, Reply

CONFIG = {
    "web_fetch": {"allow_networks": ["127.0.0.1/32"]},
}


def test_web_search_and_web_fetch_are_auto_deferred_in_the_web_namespace() -> None:
    entries = web_entries(PegboardConfig(), pathlib.Path("."))
    assert [(e.name, e.namespace, e.defer) for e in entries] == [
        ("web_search", "web", "auto"),
        ("web_fetch", "web", "auto"),
    ]
    for entry in entries:
        assert entry.tool.annotations is not None
        assert entry.tool.annotations["readOnlyHint"] is True
        assert entry.tool.annotations["openWorldHint"] is True


def test_they_apply_only_when_the_profile_enables_web_search() -> None:
    on = ToolApplyScope(assistant=AssistantSettings(enable_web_search=True))
    off = ToolApplyScope()
    for entry in web_entries(PegboardConfig(), pathlib.Path(".")):
        assert entry.applies is not None
        assert entry.applies(on) is True
        assert entry.applies(off) is False


@pytest.mark.anyio
async def test_web_fetch_runs_through_the_tool(server: LocalServer) -> None:
    server.route("/", Reply(headers={"content-type": "text/plain"}, body=b"hello"))
    (_, fetch) = web_entries(PegboardConfig.model_validate(CONFIG), pathlib.Path("."))
    result = await fetch.tool.run({"url": server.url("/")}, ToolContext())
    assert result == f"URL: {server.url('/')}\n\nhello"


@pytest.mark.anyio
async def test_web_search_uses_the_provider_the_profile_names(server: LocalServer) -> None:
    body = b'{"results": [{"title": "T", "url": "https://t.example/", "content": "c"}]}'
    server.route("/search", Reply(headers={"content-type": "application/json"}, body=body))
    config = PegboardConfig.model_validate(
        {
            "web_search": {
                "first": {"type": "searxng", "url": "http://127.0.0.1:1"},
                "local": {"type": "searxng", "url": server.url("")},
            }
        }
    )
    (search, _) = web_entries(config, pathlib.Path("."))
    scope = ToolApplyScope(
        assistant=AssistantSettings(enable_web_search=True, web_search_provider="local")
    )
    result = await search.tool.run({"query": "q", "max_results": 1}, ToolContext(scope=scope))
    assert result == [{"id": 1, "title": "T", "url": "https://t.example/", "content": "c"}]
    assert search.tool.to_model_output(result).structured == result


@pytest.mark.anyio
async def test_a_call_without_a_scope_uses_the_default_profiles_provider(
    server: LocalServer,
) -> None:
    body = b'{"results": [{"title": "D", "url": "https://d.example/", "content": ""}]}'
    server.route("/search", Reply(headers={"content-type": "application/json"}, body=body))
    config = PegboardConfig.model_validate(
        {
            "profiles": {"default": {"web_search": True, "web_search_provider": "local"}},
            "web_search": {
                "first": {"type": "searxng", "url": "http://127.0.0.1:1"},
                "local": {"type": "searxng", "url": server.url("")},
            },
        }
    )
    (search, _) = web_entries(config, pathlib.Path("."))
    result = await search.tool.run({"query": "q"}, ToolContext())
    assert result == [{"id": 1, "title": "D", "url": "https://d.example/", "content": ""}]


def test_the_model_sees_these_input_schemas() -> None:
    search, fetch = web_entries(PegboardConfig(), pathlib.Path("."))
    assert search.tool.input_schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to search for."},
            "max_results": {
                "type": "integer",
                "description": "How many results to return.",
                "default": 5,
                "minimum": 1,
                "maximum": 20,
            },
        },
        "required": ["query"],
    }
    assert fetch.tool.input_schema == {
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "The http or https URL."},
            "max_chars": {
                "type": "integer",
                "description": "Characters of text to return at most.",
                "default": 20000,
                "minimum": 100,
                "maximum": 200000,
            },
        },
        "required": ["url"],
    }


@pytest.mark.anyio
async def test_out_of_range_arguments_are_refused_before_any_request() -> None:
    from pegboard.errors import InvalidToolArguments

    search, _ = web_entries(PegboardConfig(), pathlib.Path("."))
    with pytest.raises(InvalidToolArguments, match="max_results"):
        await search.tool.run({"query": "q", "max_results": 500}, ToolContext())

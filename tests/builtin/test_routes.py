"""The built-ins through ``pegboard serve``, the runtime and the library.

Every server is on 127.0.0.1 and this package's network guard is on (conftest.py); the
``pegboard serve`` subprocess is given loopback URLs only, reachable because the config
allows 127.0.0.1/32.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from pegboard import build_agent_params, load_tool_entries
from pegboard.config import load_config
from pegboard.core.entry import ToolEntry
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import AssistantSettings, ModelInfo, ToolApplyScope
from pegboard.core.tool import Tool
from pegboard.runtime import RuntimeOptions, ToolRuntime
from tests.builtin.local_http import LocalServer
from tests.builtin.routes import LOOPBACK, Cli, searxng_reply


# -- pegboard serve ----------------------------------------------------------------------------
@pytest.mark.anyio
async def test_pegboard_serve_lists_and_calls_web_fetch_and_kb_search(
    cli: Cli, tmp_path: Path, site: LocalServer, notes: Path
) -> None:
    from tests.gateway.harness import serve_stdio, text_of

    cli.write(
        {
            "profiles": {"default": {"web_search": True, "knowledge_bases": ["handbook"]}},
            "web_fetch": {"allow_networks": LOOPBACK},
        }
    )
    assert cli("kb", "add", "handbook", str(notes)).exit_code == 0

    with anyio.fail_after(60):
        async with serve_stdio(tmp_path) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            page = await client.call_tool("web_fetch", {"url": site.url("/page.html")})
            kb = await client.call_tool("kb_search", {"query": "dog at the office", "top_k": 1})

    assert listed == ["kb_list", "kb_search", "web_fetch", "web_search"]
    assert not page.is_error
    assert "Sea otters hold hands" in text_of(page)
    assert not kb.is_error
    [hit] = json.loads(text_of(kb))
    assert (hit["title"], hit["source"]) == ("Pet policy", str(notes / "pets.md"))


# -- the runtime --------------------------------------------------------------------------------
@pytest.mark.anyio
async def test_a_changed_provider_takes_effect_on_the_next_config_apply(
    cli: Cli, server: LocalServer, other_server: LocalServer
) -> None:
    server.route("/search", searxng_reply("Alpha"))
    other_server.route("/search", searxng_reply("Beta"))

    def config(url: str) -> dict[str, Any]:
        return {
            "profiles": {"default": {"web_search": True}},
            "web_search": {"local": {"type": "searxng", "url": url}},
        }

    cli.write(config(server.url("")))
    runtime = ToolRuntime(load_config(cli.config), RuntimeOptions(prewarm=False))
    search = runtime.surface.call_tool
    first = await search("web_search", {"query": "otters"}, call_id="1", approval=None)
    cli.write(config(other_server.url("")))
    await runtime.apply_config(load_config(cli.config))
    second = await search("web_search", {"query": "otters"}, call_id="2", approval=None)

    runtime.catalog.store.close()

    assert json.loads(first.as_text())[0]["title"] == "Alpha"
    assert json.loads(second.as_text())[0]["title"] == "Beta"
    assert (len(server.seen), len(other_server.seen)) == (1, 1)


@pytest.mark.anyio
async def test_knowledge_bases_added_to_the_profile_are_listed_after_the_config_apply(
    cli: Cli,
) -> None:
    cli.write({})
    runtime = ToolRuntime(load_config(cli.config), RuntimeOptions(prewarm=False))
    before = [t["name"] for t in runtime.surface.list_tools_json()]
    cli.write({"profiles": {"default": {"knowledge_bases": ["handbook"]}}})
    await runtime.apply_config(load_config(cli.config))
    after = [t["name"] for t in runtime.surface.list_tools_json()]
    runtime.catalog.store.close()

    assert (before, after) == ([], ["kb_list", "kb_search"])


def test_registering_the_builtins_imports_no_parser_search_library_or_model() -> None:
    code = (
        "import sys, pathlib\n"
        "from pegboard.config import load_config\n"
        "from pegboard.runtime import ToolRuntime\n"
        "ToolRuntime(load_config(sys.argv[1]))\n"
        "heavy = ('trafilatura', 'ddgs', 'bs4', 'pypdf', 'lxml', 'wordllama', 'sqlite_vec')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "/nonexistent/config.toml"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == "[]\n"


# -- the library --------------------------------------------------------------------------------
def _chat_turn(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(args)}
    call = {"id": call_id, "type": "function", "function": function}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _calendar_tools(count: int) -> list[ToolEntry]:
    def make(i: int) -> ToolEntry:
        def run(day: str) -> str:
            return day

        run.__doc__ = f"Calendar operation number {i}: list, move or annotate meetings on a day."
        run.__name__ = f"calendar_{i}"
        return ToolEntry(f"calendar_{i}", "calendar", Tool.from_function(run))

    return [make(i) for i in range(count)]


@pytest.mark.anyio
async def test_a_library_agent_reaches_deferred_builtins_through_search_and_invoke(
    cli: Cli, site: LocalServer, notes: Path
) -> None:
    cli.write({"web_fetch": {"allow_networks": LOOPBACK}})
    assert cli("kb", "add", "handbook", str(notes)).exit_code == 0
    registry = ToolRegistry(load_tool_entries())  # the default config: $PEGBOARD_CONFIG
    registry.register_many(_calendar_tools(40))
    settings = AssistantSettings(enable_web_search=True, knowledge_base_ids=("handbook",))
    params = build_agent_params(
        registry, ToolApplyScope(assistant=settings), ModelInfo("gpt", "openai", 8_000)
    )
    assert [t["function"]["name"] for t in params.tools] == [
        "tool_search",
        "tool_inspect",
        "tool_invoke",
    ]
    assert params.exposition is not None
    deferred = {e.name for e in params.exposition.deferred}
    assert {"web_search", "web_fetch", "kb_search", "kb_list"} <= deferred

    async def turn(call_id: str, name: str, args: dict[str, Any]) -> str:
        with anyio.fail_after(30):
            [answer] = await params.dispatcher.respond(_chat_turn(call_id, name, args))
        return str(answer["content"])

    found = await turn("c1", "tool_search", {"query": "fetch a web page by its URL"})
    fetched = await turn(
        "c2", "tool_invoke", {"name": "web_fetch", "params": {"url": site.url("/page.html")}}
    )
    kb = await turn(
        "c3", "tool_invoke", {"name": "kb_search", "params": {"query": "dog at the office"}}
    )

    assert "- web_fetch:" in found
    assert "Sea otters hold hands" in fetched
    assert json.loads(kb)[0]["title"] == "Pet policy"


def test_load_tool_entries_of_a_bare_config_needs_a_data_dir() -> None:
    from pegboard.config.model import PegboardConfig

    with pytest.raises(TypeError, match="a PegboardConfig needs data_dir"):
        load_tool_entries(PegboardConfig())

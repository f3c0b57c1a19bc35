"""The built-ins on every route: ``pegboard tools``, ``pegboard serve``, the library.

Every server is on 127.0.0.1 and this package's network guard is on (conftest.py); the
subprocesses (``pegboard serve``, the ``pegboard`` executable) are given loopback URLs only,
reachable only because the config allows ``127.0.0.1/32`` (or refused because it does not).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import tomli_w
from typer.testing import CliRunner, Result

from pegboard import build_agent_params, load_tool_entries
from pegboard.cli.app import app
from pegboard.config import load_config
from pegboard.core.entry import ToolEntry
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import AssistantSettings, ModelInfo, ToolApplyScope
from pegboard.core.tool import Tool
from pegboard.runtime import RuntimeOptions, ToolRuntime
from tests.builtin.local_http import LocalServer, Reply

PEGBOARD = str(Path(sys.executable).parent / "pegboard")
PAGE = (
    b"<html><head><title>Field notes</title></head><body><article><h1>Otters</h1>"
    b"<p>Sea otters hold hands while they sleep so that they do not drift apart.</p>"
    b"</article></body></html>"
)
LOOPBACK = ["127.0.0.1/32"]


def _searxng(*titles: str) -> Reply:
    results = [
        {"url": f"https://{t.lower()}.example/", "title": t, "content": f"about {t}"}
        for t in titles
    ]
    body = {"query": "otters", "number_of_results": len(results), "results": results}
    return Reply(200, {"content-type": "application/json"}, json.dumps(body).encode())


@pytest.fixture
def site(server: LocalServer) -> LocalServer:
    server.route("/page.html", Reply(200, {"content-type": "text/html"}, PAGE))
    return server


class Cli:
    """``pegboard`` in this process (the network guard applies), one config file."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.config = tmp_path / "config.toml"
        self.data = tmp_path / "data"
        monkeypatch.setenv("PEGBOARD_CONFIG", str(self.config))
        monkeypatch.setenv("PEGBOARD_DATA_DIR", str(self.data))
        self.write({})

    def write(self, config: dict[str, Any]) -> None:
        self.config.write_text(tomli_w.dumps(config), encoding="utf-8")

    def __call__(self, *args: str) -> Result:
        return CliRunner().invoke(app, list(args))


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    return Cli(tmp_path, monkeypatch)


def _profiles(**extra: Any) -> dict[str, Any]:
    return {
        "profiles": {
            "plain": {},
            "web": {"web_search": True},
            "notes": {"knowledge_bases": ["handbook"]},
        },
        **extra,
    }


# -- pegboard tools -----------------------------------------------------------------------------
def test_tools_list_shows_the_builtins_only_when_the_profile_enables_them(cli: Cli) -> None:
    cli.write(_profiles())

    def names(profile: str) -> list[str]:
        result = cli("tools", "list", "--profile", profile, "--json")
        assert result.exit_code == 0, result.output
        return [row["name"] for row in json.loads(result.stdout)]

    assert names("plain") == []
    assert names("web") == ["web_fetch", "web_search"]
    assert names("notes") == ["kb_list", "kb_search"]


def test_tools_call_web_fetch_prints_the_page_when_loopback_is_allowed(
    cli: Cli, site: LocalServer
) -> None:
    cli.write(_profiles(web_fetch={"allow_networks": LOOPBACK}))
    url = site.url("/page.html")

    result = cli("tools", "call", "web_fetch", json.dumps({"url": url}), "--profile", "web")

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"URL: {url}\n\n")
    assert "Sea otters hold hands while they sleep" in result.stdout


def test_tools_call_web_fetch_json_is_the_mcp_call_result(cli: Cli, site: LocalServer) -> None:
    cli.write(_profiles(web_fetch={"allow_networks": LOOPBACK}))

    result = cli(
        "tools", "call", "web_fetch", json.dumps({"url": site.url("/page.html")}), "-p", "web",
        "--json",
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer.get("isError", False) is False
    assert "Sea otters hold hands" in answer["content"][0]["text"]


def test_tools_call_web_fetch_of_loopback_without_allow_networks_exits_1_saying_why(
    cli: Cli, site: LocalServer
) -> None:
    cli.write(_profiles())

    result = cli("tools", "call", "web_fetch", json.dumps({"url": site.url("/")}), "-p", "web")

    assert result.exit_code == 1
    assert result.output == (
        "127.0.0.1 is a loopback address; allow it with [web_fetch] allow_networks\n"
    )
    assert site.seen == []


def test_tools_call_web_search_uses_the_provider_of_the_chosen_profile(
    cli: Cli, server: LocalServer, other_server: LocalServer
) -> None:
    server.route("/search", _searxng("Alpha"))
    other_server.route("/search", _searxng("Beta", "Gamma"))
    cli.write(
        {
            "profiles": {
                "one": {"web_search": True, "web_search_provider": "local"},
                "two": {"web_search": True, "web_search_provider": "other"},
            },
            "web_search": {
                "local": {"type": "searxng", "url": server.url("")},
                "other": {"type": "searxng", "url": other_server.url("")},
            },
        }
    )

    one = cli("tools", "call", "web_search", '{"query": "otters"}', "-p", "one")
    two = cli("tools", "call", "web_search", '{"query": "otters", "max_results": 1}', "-p", "two")

    assert one.exit_code == 0, one.output
    assert json.loads(one.stdout) == [
        {"id": 1, "title": "Alpha", "url": "https://alpha.example/", "content": "about Alpha"}
    ]
    assert two.exit_code == 0, two.output
    assert json.loads(two.stdout) == [
        {"id": 1, "title": "Beta", "url": "https://beta.example/", "content": "about Beta"}
    ]
    assert [s.path for s in server.seen] == ["/search?q=otters&format=json"]
    assert len(other_server.seen) == 1


def test_tools_call_kb_search_reads_the_profiles_bases(cli: Cli, notes: Path) -> None:
    cli.write(_profiles())
    assert cli("kb", "add", "handbook", str(notes)).exit_code == 0

    found = cli(
        "tools", "call", "kb_search", '{"query": "can I bring my dog to the office", "top_k": 1}',
        "-p", "notes",
    )  # fmt: skip
    listed = cli("tools", "call", "kb_list", "-p", "notes")
    hidden = cli("tools", "call", "kb_search", '{"query": "dog"}', "-p", "web")

    assert found.exit_code == 0, found.output
    [hit] = json.loads(found.stdout)
    assert (hit["id"], hit["knowledge_base"], hit["title"]) == (1, "handbook", "Pet policy")
    assert hit["source"] == str(notes / "pets.md")
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.stdout) == [
        {
            "id": "handbook",
            "documents": 2,
            "sample_sources": sorted([str(notes / "parking.md"), str(notes / "pets.md")]),
        }
    ]
    assert hidden.exit_code == 3


def test_the_pegboard_executable_fetches_a_loopback_page_it_is_allowed(
    tmp_path: Path, site: LocalServer
) -> None:
    # A real subprocess (no guard inside it): the only URL it gets is on 127.0.0.1.
    config = tmp_path / "config.toml"
    config.write_text(tomli_w.dumps(_profiles(web_fetch={"allow_networks": LOOPBACK})))
    env = {"PEGBOARD_CONFIG": str(config), "PEGBOARD_DATA_DIR": str(tmp_path / "data")}
    args = json.dumps({"url": site.url("/page.html")})

    done = subprocess.run(
        [PEGBOARD, "tools", "call", "web_fetch", args, "-p", "web", "--json"],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert "Sea otters hold hands" in json.loads(done.stdout)["content"][0]["text"]
    assert [s.path for s in site.seen] == ["/page.html"]


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
    server.route("/search", _searxng("Alpha"))
    other_server.route("/search", _searxng("Beta"))

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

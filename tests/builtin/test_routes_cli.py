"""The built-ins through ``pegboard tools`` (in process, and the executable once).

Every server is on 127.0.0.1 and this package's network guard is on (conftest.py); the
executable is given a loopback URL only, reachable because the config allows 127.0.0.1/32.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import tomli_w

from tests.builtin.local_http import LocalServer
from tests.builtin.routes import LOOPBACK, PEGBOARD, Cli, profiles, searxng_reply


# -- pegboard tools -----------------------------------------------------------------------------
def test_tools_list_shows_the_builtins_only_when_the_profile_enables_them(cli: Cli) -> None:
    cli.write(profiles())

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
    cli.write(profiles(web_fetch={"allow_networks": LOOPBACK}))
    url = site.url("/page.html")

    result = cli("tools", "call", "web_fetch", json.dumps({"url": url}), "--profile", "web")

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"URL: {url}\n\n")
    assert "Sea otters hold hands while they sleep" in result.stdout


def test_tools_call_web_fetch_json_is_the_mcp_call_result(cli: Cli, site: LocalServer) -> None:
    cli.write(profiles(web_fetch={"allow_networks": LOOPBACK}))

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
    cli.write(profiles())

    result = cli("tools", "call", "web_fetch", json.dumps({"url": site.url("/")}), "-p", "web")

    assert result.exit_code == 1
    assert result.output == (
        "127.0.0.1 is a loopback address; allow it with [web_fetch] allow_networks\n"
    )
    assert site.seen == []


def test_tools_call_web_search_uses_the_provider_of_the_chosen_profile(
    cli: Cli, server: LocalServer, other_server: LocalServer
) -> None:
    server.route("/search", searxng_reply("Alpha"))
    other_server.route("/search", searxng_reply("Beta", "Gamma"))
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
    cli.write(profiles())
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
    config.write_text(tomli_w.dumps(profiles(web_fetch={"allow_networks": LOOPBACK})))
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

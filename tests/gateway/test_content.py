"""Upstream resources, resource templates and prompts through ``pegboard serve`` (stdio), with
the official SDK client; two upstreams with the same URIs and names stay apart. Lists come from
the cache (the catalog store) and are refreshed in the background, so a client lists again on
resources/prompts list_changed, and a restarted gateway lists them with the upstream hanging."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest

from pegboard.calls.audit_log import AUDIT_FILE
from tests.gateway.harness import GATEWAY_SERVERS, run_cli, serve_stdio, write_config

pytestmark = pytest.mark.anyio


def _content(label: str) -> dict[str, object]:
    return {"command": sys.executable, "args": [str(GATEWAY_SERVERS / "content.py"), label]}


class _ContentChanges:
    """Resource or prompt list_changed notifications, taken one wait at a time."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    async def __call__(self, message: Any) -> None:
        changed = (
            mcp_types.ResourceListChangedNotification,
            mcp_types.PromptListChangedNotification,
        )
        if isinstance(message, changed):
            self._event.set()

    async def wait(self) -> None:
        await self._event.wait()
        self._event = anyio.Event()


Listed = tuple[list[str], list[str], list[str]]


async def _lists(client: Any) -> Listed:
    resources = (await client.list_resources()).resources
    templates = (await client.list_resource_templates()).resource_templates
    prompts = (await client.list_prompts()).prompts
    return (
        sorted(str(r.uri) for r in resources),
        sorted(t.uri_template for t in templates),
        sorted(p.name for p in prompts),
    )


async def _until(client: Any, changes: _ContentChanges, ready: Callable[[Listed], bool]) -> Listed:
    """The lists once ``ready(lists)`` holds, listing again on each list_changed."""
    with anyio.fail_after(60):
        while not ready(listed := await _lists(client)):
            await changes.wait()
    return listed


def _text(result: mcp_types.ReadResourceResult) -> list[tuple[str, str]]:
    return [
        (str(c.uri), c.text)
        for c in result.contents
        if isinstance(c, mcp_types.TextResourceContents)
    ]


async def test_resources_templates_and_prompts_of_two_servers_are_listed_read_and_got(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, {"servers": {"a": _content("A"), "b": _content("B")}})
    changes = _ContentChanges()

    async with serve_stdio(tmp_path, notifications=changes) as client:  # type: ignore[arg-type]
        await _until(client, changes, lambda lists: all(len(x) == 2 for x in lists))
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        prompts = (await client.list_prompts()).prompts
        read = await client.read_resource("pegboard://b/note://readme")
        expanded = await client.read_resource("pegboard://a/note://todo")
        got = await client.get_prompt("mcp__a__greet", {"name": "Ada"})

    assert sorted((str(r.uri), r.name) for r in resources) == [
        ("pegboard://a/note://readme", "readme"),
        ("pegboard://b/note://readme", "readme"),
    ]
    assert sorted(t.uri_template for t in templates) == [
        "pegboard://a/note://{name}",
        "pegboard://b/note://{name}",
    ]
    assert sorted(p.name for p in prompts) == ["mcp__a__greet", "mcp__b__greet"]
    assert _text(read) == [("pegboard://b/note://readme", "readme of B")]
    assert _text(expanded) == [("pegboard://a/note://todo", "note todo of A")]
    [message] = got.messages
    assert isinstance(message.content, mcp_types.TextContent)
    assert message.content.text == "Hello Ada from A"


async def test_an_unknown_resource_or_prompt_is_an_error_naming_it(tmp_path: Path) -> None:
    write_config(tmp_path, {"servers": {"a": _content("A")}})

    async with serve_stdio(tmp_path) as client:
        with pytest.raises(Exception, match="Resource not found: pegboard://zz/note://readme"):
            await client.read_resource("pegboard://zz/note://readme")
        with pytest.raises(Exception, match="Prompt not found: mcp__zz__greet"):
            await client.get_prompt("mcp__zz__greet", {})
        # A prompt name of a known server goes to that server (a get never waits for a list).
        with pytest.raises(Exception, match="Unknown prompt: nope"):
            await client.get_prompt("mcp__a__nope", {})


async def test_an_upstream_resource_change_reaches_the_client(tmp_path: Path) -> None:
    write_config(tmp_path, {"servers": {"a": _content("A")}})
    await run_cli(tmp_path, "servers", "refresh")  # add_note is cached: callable at once
    changes = _ContentChanges()

    async with serve_stdio(tmp_path, notifications=changes) as client:  # type: ignore[arg-type]
        await _until(client, changes, lambda lists: len(lists[0]) == 1)
        added = await client.call_tool("mcp__a__add_note", {"name": "new"})
        assert not added.is_error
        listed = await _until(client, changes, lambda lists: len(lists[0]) == 2)

    assert listed[0] == ["pegboard://a/note://new", "pegboard://a/note://readme"]


async def test_a_restarted_gateway_lists_cached_content_while_the_upstream_hangs(
    tmp_path: Path,
) -> None:
    hang = tmp_path / "hang"
    server = _content("A") | {"args": [str(GATEWAY_SERVERS / "content.py"), "A", str(hang)]}
    write_config(tmp_path, {"servers": {"a": server}})
    changes = _ContentChanges()
    async with serve_stdio(tmp_path, notifications=changes) as client:  # type: ignore[arg-type]
        first = await _until(client, changes, lambda lists: all(lists))

    hang.touch()  # the same launch definition, now never answering
    async with serve_stdio(tmp_path) as client:
        with anyio.fail_after(30):  # far below the upstream's 120 s first-connect timeout
            again = await _lists(client)

    assert (
        first
        == again
        == (
            ["pegboard://a/note://readme"],
            ["pegboard://a/note://{name}"],
            ["mcp__a__greet"],
        )
    )


async def test_a_server_outside_the_profiles_selection_contributes_no_resources_or_prompts(
    tmp_path: Path,
) -> None:
    profile = {"mcp_mode": "manual", "mcp_servers": ["b"]}
    servers = {"a": _content("A"), "b": _content("B")}
    write_config(tmp_path, {"servers": servers, "profiles": {"default": profile}})
    changes = _ContentChanges()

    async with serve_stdio(tmp_path, notifications=changes) as client:  # type: ignore[arg-type]
        listed = await _until(client, changes, lambda lists: all(lists))
        with pytest.raises(Exception, match="Resource not found: pegboard://a/note://readme"):
            await client.read_resource("pegboard://a/note://readme")
        with pytest.raises(Exception, match="Prompt not found: mcp__a__greet"):
            await client.get_prompt("mcp__a__greet", {"name": "Ada"})

    # Refused, and audited like an unknown tool: one record each.
    lines = (tmp_path / "data" / AUDIT_FILE).read_text().splitlines()
    assert [(r["tool"], r["approval"], r["outcome"]) for r in map(json.loads, lines)] == [
        ("pegboard://a/note://readme", "not_required", "error"),
        ("mcp__a__greet", "not_required", "error"),
    ]
    assert listed == (
        ["pegboard://b/note://readme"],
        ["pegboard://b/note://{name}"],
        ["mcp__b__greet"],
    )

"""Upstream resources, resource templates and prompts through ``pegboard serve`` (stdio), with
the official SDK client; two upstreams with the same URIs and names stay apart."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest

from tests.gateway.harness import GATEWAY_SERVERS, run_cli, serve_stdio, write_config

pytestmark = pytest.mark.anyio


def _content(label: str) -> dict[str, object]:
    return {"command": sys.executable, "args": [str(GATEWAY_SERVERS / "content.py"), label]}


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

    async with serve_stdio(tmp_path) as client:
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
        with pytest.raises(Exception, match="Prompt not found: mcp__a__nope"):
            await client.get_prompt("mcp__a__nope", {})


class _ResourceChanges:
    def __init__(self) -> None:
        self.seen = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, mcp_types.ResourceListChangedNotification):
            self.seen.set()


async def test_an_upstream_resource_change_reaches_the_client(tmp_path: Path) -> None:
    write_config(tmp_path, {"servers": {"a": _content("A")}})
    await run_cli(tmp_path, "servers", "refresh")  # add_note is cached: callable at once
    changes = _ResourceChanges()

    async with serve_stdio(tmp_path, notifications=changes) as client:  # type: ignore[arg-type]
        await client.list_resources()
        added = await client.call_tool("mcp__a__add_note", {"name": "new"})
        assert not added.is_error
        with anyio.fail_after(30):
            await changes.seen.wait()
        listed = sorted(str(r.uri) for r in (await client.list_resources()).resources)

    assert listed == ["pegboard://a/note://new", "pegboard://a/note://readme"]

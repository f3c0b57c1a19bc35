"""Attacks on upstream prompts and resources passed through ``pegboard serve``.

1. Shadowing by name: server ids ``g`` (prompt ``x__p``) and ``g__x`` (prompt ``p``) both gave
   ``mcp__g__x__p``, so a get went to one of them. Prompt names now follow the tools'
   wire-name scheme: distinct, and each get reaches its own server.
2. A redefined prompt kept its "allow for this session" grant. A grant (and a yes) is bound
   to the listed definition: a redefinition asks again, after a grant and between the two
   input-required rounds of a modern client; a listing that arrives between the rounds (the
   content was not listed at the first) does not (the first round's definition is sealed).
3. A resource URI with credentials (``db://u:SECRET@host/x?api_key=...``) went into the audit
   log raw. The audit stores it redacted.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext

from pegboard.calls.audit_log import AUDIT_FILE
from tests.gateway.harness import (
    GATEWAY_SERVERS,
    scripted_elicitation,
    serve_stdio,
    write_config,
)

pytestmark = pytest.mark.anyio

SECRET_URI = "db://admin:hunter2-SECRET@db.internal/x?api_key=sk-live-K123&table=users"


def _content(label: str, **extra: object) -> dict[str, object]:
    entry: dict[str, object] = {
        "command": sys.executable,
        "args": [str(GATEWAY_SERVERS / "content.py"), label],
    }
    return entry | extra


def _text(result: mcp_types.GetPromptResult) -> str:
    content = result.messages[0].content
    assert isinstance(content, mcp_types.TextContent)
    return content.text


class _Changes:
    """Resource or prompt list_changed notifications, taken one wait at a time."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    async def __call__(self, message: Any) -> None:
        kinds = (mcp_types.ResourceListChangedNotification, mcp_types.PromptListChangedNotification)
        if isinstance(message, kinds):
            self._event.set()

    async def until(self, ready: Callable[[], Awaitable[bool]]) -> None:
        """Return once ``ready()`` holds, asking again on each list_changed."""
        with anyio.fail_after(60):
            while not await ready():
                await self._event.wait()
                self._event = anyio.Event()


async def test_prompts_of_ids_g_and_g__x_never_share_a_name_and_each_get_reaches_its_server(
    tmp_path: Path,
) -> None:
    write_config(
        tmp_path,
        {
            "servers": {
                "g": _content("G", env={"CONTENT_PROMPT": "x__p"}),
                "g__x": _content("GX", env={"CONTENT_PROMPT": "p"}),
            }
        },
    )
    changes = _Changes()
    async with serve_stdio(tmp_path, notifications=changes) as client:  # type: ignore[arg-type]

        async def both() -> bool:
            return len((await client.list_prompts()).prompts) == 2

        await changes.until(both)
        names = sorted(p.name for p in (await client.list_prompts()).prompts)
        got = {name: _text(await client.get_prompt(name, {"name": "Ada"})) for name in names}

    assert len(set(names)) == 2
    assert "mcp__g__x__p" not in names  # neither may claim the ambiguous plain name
    assert sorted(got.values()) == ["Hello Ada from G", "Hello Ada from GX"]


def _redefinable(label: str) -> dict[str, object]:
    """A gated content server with tool ``redefine_prompt``."""
    return _content(label, approve_content=True, env={"CONTENT_REDEFINE": "1"})


def _records(tmp_path: Path) -> list[tuple[str, str]]:
    lines = (tmp_path / "data" / AUDIT_FILE).read_text().splitlines()
    return [(r["tool"], r["approval"]) for r in map(json.loads, lines)]


async def _until_listed(client: Client, text: str) -> None:
    """Polls the gateway's listings (either era) until ``text`` is in them, 30 s at most."""
    for _ in range(150):
        listed = str(await client.list_prompts()) + str(await client.list_resources())
        if text in listed:
            return
        await anyio.sleep(0.2)
    raise AssertionError(f"{text!r} never listed")


def _changing_between_rounds(
    asked: list[str],
    clients: list[Client],
    change: tuple[str, dict[str, Any], str],
    decision: str,
) -> Callable[..., Awaitable[mcp_types.ElicitResult]]:
    """An elicitation callback answering ``decision``; at the first question (between a
    modern client's first round and its retry) it calls tool ``change[0]`` with
    ``change[1]`` through ``clients[0]`` and waits until ``change[2]`` is listed."""

    async def elicit(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        asked.append(params.message)
        if len(asked) == 1:
            tool, arguments, listed = change
            await clients[0].call_tool(tool, arguments)
            await _until_listed(clients[0], listed)
        return mcp_types.ElicitResult(action="accept", content={"decision": decision})

    return elicit


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_redefined_prompt_is_asked_again_after_allow_for_this_session(
    tmp_path: Path, mode: str
) -> None:
    write_config(tmp_path, {"servers": {"a": _redefinable("A")}})
    asked: list[str] = []
    elicit = scripted_elicitation(["allow_session", "allow_session"], asked)

    async with serve_stdio(tmp_path, elicitation=elicit, mode=mode) as client:
        await _until_listed(client, "mcp__a__greet")
        first = _text(await client.get_prompt("mcp__a__greet", {"name": "Ada"}))
        again = _text(await client.get_prompt("mcp__a__greet", {"name": "Ada"}))
        asked_before = len(asked)
        await client.call_tool("mcp__a__redefine_prompt", {})
        await _until_listed(client, "now does something else")
        after = _text(await client.get_prompt("mcp__a__greet", {"name": "Ada"}))
        repeat = _text(await client.get_prompt("mcp__a__greet", {"name": "Ada"}))

    assert (first, again) == ("Hello Ada from A", "Hello Ada from A")
    assert asked_before == 1  # the grant covered the repeat of the same definition
    assert (after, repeat) == ("Hello again Ada from A", "Hello again Ada from A")
    assert len(asked) == 2  # the redefinition voided it; the new grant covers the new one


async def test_a_prompt_redefined_between_the_rounds_is_asked_about_again(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, {"servers": {"a": _redefinable("A")}})
    asked: list[str] = []
    clients: list[Client] = []
    # between the first round and the retry: the server redefines the prompt
    change = ("mcp__a__redefine_prompt", {}, "now does something else")
    elicit = _changing_between_rounds(asked, clients, change, "allow_once")

    async with serve_stdio(tmp_path, elicitation=elicit, mode="2026-07-28") as client:
        clients.append(client)
        await _until_listed(client, "mcp__a__greet")
        got = _text(await client.get_prompt("mcp__a__greet", {"name": "Ada"}))

    assert got == "Hello again Ada from A"
    assert len(asked) == 2  # the yes was about the old definition: asked about the new one
    assert [a for t, a in _records(tmp_path) if t == "mcp__a__greet"] == [
        "required_no_handler",  # round 1: asked
        "required_no_handler",  # the retry: another definition, asked again
        "allow_once",
    ]


async def test_content_listed_between_the_rounds_is_decided_on_the_first_rounds_definition(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, {"servers": {"a": _redefinable("A")}})
    shown = "pegboard://a/note://late"  # read through the template: not listed at round 1
    asked: list[str] = []
    clients: list[Client] = []
    # between the rounds the resource gets listed
    change = ("mcp__a__add_note", {"name": "late"}, shown)
    elicit = _changing_between_rounds(asked, clients, change, "allow_session")

    async with serve_stdio(tmp_path, elicitation=elicit, mode="2026-07-28") as client:
        clients.append(client)
        await _until_listed(client, "mcp__a__greet")
        first = await client.read_resource(shown)
        listed_now = await client.read_resource(shown)

    assert first.contents
    assert listed_now.contents
    assert len(asked) == 2  # round 1 once, then once more for the listed definition
    assert [a for t, a in _records(tmp_path) if t == shown] == [
        "required_no_handler",
        "allow_session",  # the retry: the unlisted definition the user was asked about
        "required_no_handler",  # the listed one is another definition: asked
        "allow_session",
    ]


async def test_a_resource_uri_with_credentials_is_redacted_in_the_audit(tmp_path: Path) -> None:
    write_config(
        tmp_path, {"servers": {"a": _content("A", env={"CONTENT_SECRET_URI": SECRET_URI})}}
    )
    shown = f"pegboard://a/{SECRET_URI}"

    changes = _Changes()
    async with serve_stdio(tmp_path, notifications=changes) as client:  # type: ignore[arg-type]

        async def listed() -> bool:
            return shown in [str(r.uri) for r in (await client.list_resources()).resources]

        await changes.until(listed)
        read = await client.read_resource(shown)

    audit = (tmp_path / "data" / AUDIT_FILE).read_text()
    [record] = [json.loads(line) for line in audit.splitlines()]
    assert isinstance(read.contents[0], mcp_types.TextResourceContents)
    assert read.contents[0].text == "db of A"
    for secret in ("hunter2", "SECRET", "sk-live-K123", "admin"):
        assert secret not in audit
    assert record["tool"] == "pegboard://a/db://***@db.internal/x?api_key=***&table=users"

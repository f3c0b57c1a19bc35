"""Reading a resource or getting a prompt through ``pegboard serve`` is authorised like a tool
call (``approve_content = true`` asks by elicitation) and leaves exactly one audit record."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import mcp_types
import pytest
from mcp.client.context import ClientRequestContext

from pegboard.calls.audit_log import AUDIT_FILE
from pegboard.calls.pending_sqlite import SqlitePendingStore
from pegboard.runtime import PENDING_FILE
from tests.gateway.harness import (
    GATEWAY_SERVERS,
    STARTUP_BOUND,
    scripted_elicitation,
    serve_stdio,
    write_config,
)

pytestmark = pytest.mark.anyio

README = "pegboard://a/note://readme"


def _content(label: str, **extra: object) -> dict[str, object]:
    entry: dict[str, object] = {
        "command": sys.executable,
        "args": [str(GATEWAY_SERVERS / "content.py"), label],
    }
    return entry | extra


def _records(tmp_path: Path) -> list[tuple[str, str, str, str]]:
    lines = (tmp_path / "data" / AUDIT_FILE).read_text().splitlines()
    return [(r["via"], r["tool"], r["approval"], r["outcome"]) for r in map(json.loads, lines)]


def _texts(result: mcp_types.ReadResourceResult) -> list[str]:
    return [c.text for c in result.contents if isinstance(c, mcp_types.TextResourceContents)]


async def test_a_gated_servers_read_and_get_ask_the_user_and_a_no_refuses_each_audited_once(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, {"servers": {"a": _content("A", approve_content=True)}})
    answers = ["allow_once", "deny", "allow_once", "deny"]
    asked: list[str] = []

    elicit = scripted_elicitation(answers, asked)

    async with serve_stdio(tmp_path, elicitation=elicit) as client:
        read = await client.read_resource(README)
        with pytest.raises(Exception, match=f"The user denied the call to {README}"):
            await client.read_resource(README)
        got = await client.get_prompt("mcp__a__greet", {"name": "Ada"})
        with pytest.raises(Exception, match="The user denied the call to mcp__a__greet"):
            await client.get_prompt("mcp__a__greet", {"name": "Bob"})

    assert _texts(read) == ["readme of A"]
    [message] = got.messages
    assert isinstance(message.content, mcp_types.TextContent)
    assert message.content.text == "Hello Ada from A"
    assert len(asked) == 4
    assert asked[0].startswith(f"Allow the tool {README} (mcp:a) to run?")
    assert f"Reading resource {README} of MCP server a" in asked[0]
    assert '"name": "Bob"' in asked[3]
    assert _records(tmp_path) == [
        ("gateway", README, "allow_once", "ok"),
        ("gateway", README, "denied", "ApprovalDenied"),
        ("gateway", "mcp__a__greet", "allow_once", "ok"),
        ("gateway", "mcp__a__greet", "denied", "ApprovalDenied"),
    ]


async def test_a_gated_read_is_refused_without_running_when_the_client_cannot_be_asked(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, {"servers": {"a": _content("A", approve_content=True)}})

    async with serve_stdio(tmp_path) as client:
        with pytest.raises(Exception, match="set approve_content = false for the server"):
            await client.read_resource(README)
        with pytest.raises(Exception, match="mcp__a__greet of MCP server a requires"):
            await client.get_prompt("mcp__a__greet", {"name": "Ada"})

    assert _records(tmp_path) == [
        ("gateway", README, "required_no_handler", "ApprovalRequired"),
        ("gateway", "mcp__a__greet", "required_no_handler", "ApprovalRequired"),
    ]


async def test_an_ungated_read_and_get_run_without_asking_and_are_audited(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, {"servers": {"a": _content("A")}})
    asked: list[str] = []

    async def elicit(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="decline")

    async with serve_stdio(tmp_path, elicitation=elicit) as client:
        read = await client.read_resource("pegboard://a/note://todo")
        got = await client.get_prompt("mcp__a__greet", {"name": "Ada"})

    assert _texts(read) == ["note todo of A"]
    assert len(got.messages) == 1
    assert asked == []
    assert _records(tmp_path) == [
        ("gateway", "pegboard://a/note://todo", "not_required", "ok"),
        ("gateway", "mcp__a__greet", "not_required", "ok"),
    ]


async def test_a_modern_client_is_asked_about_a_read_and_a_get_in_rounds_each_round_audited(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, {"servers": {"a": _content("A", approve_content=True)}})
    asked: list[str] = []
    elicit = scripted_elicitation(["allow_once", "deny", "allow_session"], asked)

    async with serve_stdio(tmp_path, mode="2026-07-28", elicitation=elicit) as client:
        # A grant is bound to the listed prompt; one decided before the listing arrived covers
        # the unlisted one only (a get never waits for a listing), and the next get would be
        # asked again: wait for the prompt to be listed.
        with anyio.fail_after(STARTUP_BOUND):
            while True:
                listed = (await client.list_prompts()).prompts
                if "mcp__a__greet" in [prompt.name for prompt in listed]:
                    break
                await anyio.sleep(0.05)
        read = await client.read_resource(README)
        with pytest.raises(Exception, match=f"The user denied the call to {README}"):
            await client.read_resource(README)
        got = await client.get_prompt("mcp__a__greet", {"name": "Ada"})
        again = await client.get_prompt("mcp__a__greet", {"name": "Ada"})  # allowed a while

    assert _texts(read) == ["readme of A"]
    assert got == again
    assert len(asked) == 3
    assert asked[0].startswith(f"Allow the tool {README} (mcp:a) to run?")
    pending = "ApprovalPending"  # the first round of each: the user is asked, nothing ran
    assert _records(tmp_path) == [
        ("gateway", README, "required_no_handler", pending),
        ("gateway", README, "allow_once", "ok"),
        ("gateway", README, "required_no_handler", pending),
        ("gateway", README, "denied", "ApprovalDenied"),
        ("gateway", "mcp__a__greet", "required_no_handler", pending),
        ("gateway", "mcp__a__greet", "allow_session", "ok"),
        ("gateway", "mcp__a__greet", "granted_earlier", "ok"),
    ]
    # each retry's answer decided the question its round asked: none is left pending
    store = SqlitePendingStore(tmp_path / "data" / PENDING_FILE)
    questions = await store.list(include_closed=True)
    store.close()
    assert [(q.request.tool_name, q.decision) for q in questions] == [
        (README, "allow_once"),
        (README, "deny"),
        ("mcp__a__greet", "allow_session"),
    ]

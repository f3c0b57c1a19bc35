"""The approvals queue end to end: a real MCP client without elicitation calls a gated tool of a
real ``pegboard serve``; the call waits; a person approves or denies it in the admin page (a
real browser) or with ``pegboard approvals``; the retried identical call runs, or is refused with
the reason."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from anyio.from_thread import start_blocking_portal

from tests.admin.browser import browser, chromium_path, page_at, screenshot
from tests.admin.served import Served, mcp_client, serving
from tests.gateway.harness import STARTUP_BOUND, run_cli, sdk_server, serve_stdio, text_of

ECHO = "mcp__toolbox__echo"
WAITS = "waits in pegboard's approvals queue"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    chromium_path()
    tmp_path = tmp_path_factory.mktemp("admin-approvals")
    config = {"servers": {"toolbox": sdk_server() | {"force_prompt_tools": ["echo"]}}}
    with serving(tmp_path, config, "--no-defer", refreshed=True) as running:
        yield running


def test_a_call_approved_once_in_the_page_runs_when_retried_and_only_once(served: Served) -> None:
    with start_blocking_portal() as portal, mcp_client(portal, served.url) as client:
        first = portal.call(client.call_tool, ECHO, {"text": "ship it\u200b"})
        assert first.is_error
        assert WAITS in text_of(first)
        assert "retry exactly the same call" in text_of(first)
        again = portal.call(client.call_tool, ECHO, {"text": "ship it\u200b"})
        assert WAITS in text_of(again)  # still waiting: one question, not two
        with browser() as chromium, page_at(chromium) as (page, errors):
            page.goto(served.base + "/admin/approvals")
            cards = page.locator("#pending article")
            assert cards.count() == 1
            card = cards.first
            assert ECHO in card.inner_text()
            assert "ship it\\u200b" in card.locator("pre").inner_text()  # invisible shown
            screenshot(page, "approvals-pending-desktop")
            card.get_by_role("button", name="Approve once").click()
            page.get_by_role("status").filter(has_text="Approved.").wait_for()
            assert page.locator("#pending article").count() == 0
            assert "allow_once" in page.locator("#history").inner_text()
            assert errors == []
        ran = portal.call(client.call_tool, ECHO, {"text": "ship it\u200b"})
        assert (ran.is_error, text_of(ran)) == (False, "ship it\u200b")
        other = portal.call(client.call_tool, ECHO, {"text": "something else"})
        assert WAITS in text_of(other)  # other arguments are not covered
        used = portal.call(client.call_tool, ECHO, {"text": "ship it\u200b"})
        assert WAITS in text_of(used)  # once means once


def test_a_call_denied_with_a_reason_in_the_page_is_refused_with_it(served: Served) -> None:
    arguments = {"text": "drop the table"}
    with start_blocking_portal() as portal, mcp_client(portal, served.url) as client:
        assert WAITS in text_of(portal.call(client.call_tool, ECHO, arguments))
        with browser() as chromium, page_at(chromium, "phone") as (page, errors):
            page.goto(served.base + "/admin/approvals")
            card = page.locator("#pending article").filter(has_text="drop the table")
            card.get_by_label("Reason").fill("not on a Friday")
            screenshot(page, "approvals-pending-phone")
            card.get_by_role("button", name="Deny").click()
            page.get_by_role("status").filter(has_text="Denied.").wait_for()
            assert errors == []
        refused = portal.call(client.call_tool, ECHO, arguments)
        assert refused.is_error
        assert "denied the call to mcp__toolbox__echo (reason: not on a Friday)" in text_of(refused)
        assert "local-user" in text_of(refused)


def test_the_cli_approves_what_a_stdio_gateway_queued(tmp_path: Path) -> None:
    config = {"servers": {"toolbox": sdk_server() | {"force_prompt_tools": ["echo"]}}}
    from tests.gateway.harness import write_config

    write_config(tmp_path, config)

    async def scenario() -> None:
        code, _, err = await run_cli(tmp_path, "servers", "refresh")
        assert code == 0, err
        with anyio.fail_after(STARTUP_BOUND):
            async with serve_stdio(tmp_path, "--no-defer") as client:
                first = await client.call_tool(ECHO, {"text": "from stdio"})
                assert WAITS in text_of(first)
                code, out, _ = await run_cli(tmp_path, "approvals", "list")
                assert code == 0
                [line] = out.splitlines()
                assert re.match(r"[0-9a-f]{8}  pending  mcp__toolbox__echo ", line), line
                assert '{"text": "from stdio"}' in line
                code, out, err = await run_cli(
                    tmp_path, "approvals", "approve", line[:8], "--for-a-while"
                )
                assert (code, out.strip()) == (0, f"{line[:8]}: allow_session ({ECHO})"), err
                for _ in range(2):  # for a while: every retry within it runs
                    ran = await client.call_tool(ECHO, {"text": "from stdio"})
                    assert (ran.is_error, text_of(ran)) == (False, "from stdio")
                code, _, err = await run_cli(tmp_path, "approvals", "deny", line[:8])
                assert code == 3
                assert "decided" in err

    anyio.run(scenario)

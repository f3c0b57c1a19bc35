"""An approval's own admin page, end to end: a real SDK client of the 2026-07-28 era over a
real ``pegboard serve --http`` is sent there by a URL-mode elicitation beside the form; a person
decides in the page (Playwright driving Debian's chromium); the client's retry runs the call
once, or is refused with the reason. The approvals page shows a new question by itself, and
``/metrics`` counts every decision, whichever route or process took it."""

from __future__ import annotations

import queue
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import mcp_types
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.admin.browser import browser, chromium_path, page_at, screenshot
from tests.admin.served import Served, mcp_client, serving
from tests.admin.test_metrics import value
from tests.gateway.harness import sdk_server, text_of

ECHO = "mcp__toolbox__echo"
MODERN = "2026-07-28"
WAITS = "waits in pegboard's approvals queue"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    chromium_path()
    tmp_path = tmp_path_factory.mktemp("approval-pages")
    config = {"servers": {"toolbox": sdk_server() | {"force_prompt_tools": ["echo"]}}}
    with serving(tmp_path, config, "--no-defer", refreshed=True) as running:
        yield running


class User:
    """The client's user: answers the form with ``form`` (None: dismisses it, to decide in
    the page), and accepts to open each page it is sent to (noted in ``pages``); ``done``
    receives the ids of ``notifications/elicitation/complete``."""

    def __init__(self, form: str | None = None) -> None:
        self.form = form
        self.forms: list[str] = []
        self.pages: queue.Queue[str] = queue.Queue()
        self.done: queue.Queue[str] = queue.Queue()

    async def notified(self, message: Any) -> None:
        if isinstance(message, mcp_types.ElicitCompleteNotification):
            self.done.put(message.params.elicitation_id)

    async def __call__(self, context: Any, params: Any) -> mcp_types.ElicitResult:
        if isinstance(params, mcp_types.ElicitRequestURLParams):
            self.pages.put(params.url)
            return mcp_types.ElicitResult(action="accept")
        self.forms.append(params.message)
        if self.form is None:
            return mcp_types.ElicitResult(action="cancel")
        return mcp_types.ElicitResult(action="accept", content={"decision": self.form})


@contextmanager
def modern_client(
    portal: BlockingPortal, url: str, user: User, mode: str = MODERN
) -> Iterator[Client]:
    http = portal.call(lambda: _http())
    client = Client(
        streamable_http_client(url, http_client=http),
        mode=mode,
        elicitation_callback=user,
        message_handler=user.notified,
    )
    with portal.wrap_async_context_manager(client) as connected:
        yield connected
    portal.call(http.aclose)


async def _http() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(timeout=60)


def page_url(served: Served, user: User) -> str:
    url = user.pages.get(timeout=30)
    assert re.fullmatch(re.escape(served.admin) + r"/approvals/[0-9a-f]{32}", url), url
    return url


def decide_in_page(url: str, button: str, reason: str = "", shot: str = "") -> str:
    """Open ``url`` as the person would, press ``button``; the page's decision line."""
    with browser() as chromium, page_at(chromium) as (page, errors):
        page.goto(url)
        card = page.locator("article.approval")
        assert card.count() == 1
        if reason:
            card.get_by_label("Reason").fill(reason)
        if shot:
            screenshot(page, shot)
        card.get_by_role("button", name=button).click()
        decided = page.locator("p.decision")
        decided.wait_for()
        if shot:
            screenshot(page, shot + "-decided")
        assert errors == []
        return decided.inner_text()


def pending_ids(served: Served) -> list[str]:
    with served.client() as http:
        page = http.get("/admin/approvals/pending")
    return re.findall(r'id="approval-([0-9a-f]{8})"', page.text)


def test_a_modern_client_sent_to_the_page_runs_the_call_once_approved_there(
    served: Served,
) -> None:
    user = User()
    with start_blocking_portal() as portal, modern_client(portal, served.url, user) as client:
        call = portal.start_task_soon(client.call_tool, ECHO, {"text": "via the page"})
        url = page_url(served, user)
        assert len(user.forms) == 1  # the form was offered beside the page, and dismissed
        assert url.rpartition("/")[2][:8] in pending_ids(served)
        said = decide_in_page(url, "Approve once", shot="approval-page")
        assert said == "Decided: approved once by local-user."
        ran = call.result(timeout=30)
        assert (ran.is_error, text_of(ran)) == (False, "via the page")
        assert pending_ids(served) == []
        # once means once: the same call is asked again (a new question, a new page)
        user.form = "deny"
        again = portal.call(client.call_tool, ECHO, {"text": "via the page"})
        assert again.is_error
        assert "denied the call" in text_of(again)
        assert page_url(served, user) != url


def test_a_modern_client_denied_in_the_page_is_refused_with_the_reason(served: Served) -> None:
    user = User()
    with start_blocking_portal() as portal, modern_client(portal, served.url, user) as client:
        call = portal.start_task_soon(client.call_tool, ECHO, {"text": "rm -rf"})
        said = decide_in_page(page_url(served, user), "Deny", reason="not today")
        assert said == "Decided: denied by local-user (reason: not today)."
        refused = call.result(timeout=30)
    assert refused.is_error
    assert "local-user denied the call to mcp__toolbox__echo (reason: not today)" in text_of(
        refused
    )


def test_a_round_answered_in_the_form_leaves_no_question_pending(served: Served) -> None:
    user = User(form="allow_once")
    with start_blocking_portal() as portal, modern_client(portal, served.url, user) as client:
        ran = portal.call(client.call_tool, ECHO, {"text": "by the form"})
        assert (ran.is_error, text_of(ran)) == (False, "by the form")
    url = page_url(served, user)
    assert pending_ids(served) == []
    with served.client() as http:
        page = http.get(url.removeprefix(served.base))
    assert "Decided: <b>approved once</b> by the client&#39;s user (form)." in page.text


def test_the_approvals_page_shows_a_new_question_without_a_reload(served: Served) -> None:
    arguments = {"text": "appears by itself"}
    with browser() as chromium, page_at(chromium) as (page, errors):
        page.goto(served.admin + "/approvals")
        page.evaluate("window.notReloaded = true")
        cards = page.locator("#pending article").filter(has_text="appears by itself")
        assert cards.count() == 0
        with start_blocking_portal() as portal, mcp_client(portal, served.url) as client:
            queued = portal.call(client.call_tool, ECHO, arguments)
            assert WAITS in text_of(queued)
        cards.wait_for(timeout=15_000)
        assert page.evaluate("window.notReloaded") is True
        screenshot(page, "approvals-refreshed")
        assert errors == []


def test_metrics_count_decisions_of_every_route_and_process(served: Served) -> None:
    def scrape() -> str:
        with served.client() as http:
            return http.get("/metrics").text

    decided = "pegboard_approvals_decided_total"
    before = {d: value(scrape(), decided, decision=d) for d in ("allow_once", "deny")}
    with start_blocking_portal() as portal:
        # a client that cannot be asked: queued, then denied by `pegboard approvals` (another
        # process, no event of this gateway)
        with mcp_client(portal, served.url) as legacy:
            assert WAITS in text_of(portal.call(legacy.call_tool, ECHO, {"text": "cli"}))
        [asked] = [
            line[:8] for line in _cli(served, "approvals", "list").splitlines() if '"cli"' in line
        ]
        _cli(served, "approvals", "deny", asked)
        # a modern client's form
        user = User(form="allow_once")
        with modern_client(portal, served.url, user) as modern:
            portal.call(modern.call_tool, ECHO, {"text": "form"})
    text = scrape()
    assert value(text, decided, decision="deny") == before["deny"] + 1
    assert value(text, decided, decision="allow_once") == before["allow_once"] + 1
    assert value(text, "pegboard_approvals_pending") == len(pending_ids(served))


def _cli(served: Served, *args: str) -> str:
    import subprocess

    from tests.gateway.harness import PEGBOARD, gateway_env

    done = subprocess.run(
        [PEGBOARD, *args],
        env=gateway_env(served.tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_legacy_client_offered_the_page_beside_the_form_goes_on_once_approved_there(
    served: Served,
) -> None:
    user = User()  # dismisses the form, opens the page
    with (
        start_blocking_portal() as portal,
        modern_client(portal, served.url, user, mode="legacy") as client,
    ):
        call = portal.start_task_soon(client.call_tool, ECHO, {"text": "legacy page"})
        url = page_url(served, user)
        assert decide_in_page(url, "Approve for 30 min") == (
            "Decided: approved for a while by local-user."
        )
        ran = call.result(timeout=30)  # the same request went on: no retry needed
        assert (ran.is_error, text_of(ran)) == (False, "legacy page")
        assert user.done.get(timeout=15) == url.rpartition("/")[2]
        again = portal.call(client.call_tool, ECHO, {"text": "legacy page"})  # for a while
        assert (again.is_error, text_of(again)) == (False, "legacy page")
    assert len(user.forms) == 1


def test_a_legacy_client_of_urls_only_gets_the_error_path_then_its_retry_runs_once(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp.client.session import ClientSession
    from mcp.shared.exceptions import MCPError

    built = ClientSession._build_capabilities
    urls_only = mcp_types.ElicitationCapability(url=mcp_types.UrlElicitationCapability())

    def declared(self: ClientSession, version: str) -> mcp_types.ClientCapabilities:
        return built(self, version).model_copy(update={"elicitation": urls_only})

    monkeypatch.setattr(ClientSession, "_build_capabilities", declared)
    user = User()
    arguments = {"text": "urls only"}
    with (
        start_blocking_portal() as portal,
        modern_client(portal, served.url, user, mode="legacy") as client,
    ):
        with pytest.raises(MCPError) as required:
            portal.call(client.call_tool, ECHO, arguments)
        assert required.value.error.code == -32042  # URLElicitationRequiredError
        assert WAITS in required.value.error.message
        [elicitation] = required.value.error.data["elicitations"]
        url, approval_id = elicitation["url"], elicitation["elicitationId"]
        assert (elicitation["mode"], url.rpartition("/")[2]) == ("url", approval_id)
        assert user.pages.empty()  # nothing pushed: the error path
        assert user.forms == []
        assert decide_in_page(url, "Approve once") == "Decided: approved once by local-user."
        assert user.done.get(timeout=15) == approval_id  # then the client retries
        ran = portal.call(client.call_tool, ECHO, arguments)
        assert (ran.is_error, text_of(ran)) == (False, "urls only")
        with pytest.raises(MCPError) as once:  # approved once: asked again, a new page
            portal.call(client.call_tool, ECHO, arguments)
        assert once.value.error.data["elicitations"][0]["elicitationId"] != approval_id


def test_a_stdio_gateway_sends_its_modern_client_to_a_running_pegboard_ui(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from tests.gateway.harness import serve_stdio

    chromium_path()
    tmp_path = tmp_path_factory.mktemp("stdio-ui")
    config = {"servers": {"toolbox": sdk_server() | {"force_prompt_tools": ["echo"]}}}
    ui_command = ("ui", "--port", "0", "--no-open")
    with serving(tmp_path, config, command=ui_command, refreshed=True) as ui:
        user = User()
        with (
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(
                serve_stdio(tmp_path, "--no-defer", elicitation=user, mode=MODERN)
            ) as client,
        ):
            call = portal.start_task_soon(client.call_tool, ECHO, {"text": "from stdio"})
            url = user.pages.get(timeout=60)
            assert re.fullmatch(re.escape(ui.admin) + r"/approvals/[0-9a-f]{32}", url), url
            with browser() as chromium, page_at(chromium) as (page, errors):
                page.goto(ui.url)  # pegboard ui's one-time login key, as it opened it
                page.goto(url)
                page.locator("article.approval").get_by_role("button", name="Approve once").click()
                page.locator("p.decision").wait_for()
                assert errors == []
            ran = call.result(timeout=30)
            assert (ran.is_error, text_of(ran)) == (False, "from stdio")
    assert not (tmp_path / "data" / "ui.json").exists()  # gone with the ui

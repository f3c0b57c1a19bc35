"""Every admin page in a real browser (Debian's chromium) against a real ``pegboard serve
--http`` with a real MCP client connected: each renders at 1280 px and at phone width without
console errors (a CSP violation would be one) or sideways scrolling; the tool search ranks as
``tool_search``; a server is disabled and enabled from its page."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator

import pytest
from anyio.from_thread import start_blocking_portal

from tests.admin.browser import browser, chromium_path, overflows, page_at, screenshot
from tests.admin.served import Served, mcp_client, serving
from tests.gateway.harness import sdk_server, text_of

PAGES = {
    "overview": ("/admin/", "Overview"),
    "servers": ("/admin/servers", "Servers"),
    "tools": ("/admin/tools", "Tools"),
    "audit": ("/admin/audit", "Audit"),
    "sessions": ("/admin/sessions", "Clients & sessions"),
    "config": ("/admin/config", "Effective configuration"),
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    chromium_path()
    tmp_path = tmp_path_factory.mktemp("admin-pages")
    config = {"servers": {"toolbox": sdk_server("--tools", "12", "--prefix", "lookup")}}
    with serving(tmp_path, config, "--no-defer", refreshed=True) as running:
        yield running


def test_every_page_renders_at_desktop_and_phone_width_with_a_client_connected(
    served: Served,
) -> None:
    with start_blocking_portal() as portal, mcp_client(portal, served.url) as client:
        result = portal.call(client.call_tool, "mcp__toolbox__echo", {"text": "hello"})
        assert text_of(result) == "hello"
        with browser() as chromium:
            for width in ("desktop", "phone"):
                with page_at(chromium, width) as (page, errors):
                    for name, (path, heading) in PAGES.items():
                        page.goto(served.base + path)
                        assert page.locator("h1").inner_text() == heading
                        assert not overflows(page), f"{name} scrolls sideways at {width}"
                        screenshot(page, f"{name}-{width}")
                    assert errors == []
            with page_at(chromium) as (page, errors):
                page.goto(served.base + "/admin/sessions")
                live = page.locator("table").first
                assert "legacy" not in live.inner_text()
                assert "no: gated calls wait in Approvals" in live.inner_text()
                page.goto(served.base + "/admin/audit?tool=echo")
                rows = page.locator("table.audit tbody tr")
                assert rows.count() == 1
                assert "mcp__toolbox__echo" in rows.first.inner_text()
                assert "ok" in rows.first.inner_text()
                page.goto(served.base + "/admin/")
                assert "connected" in page.locator("#server-list, table").first.inner_text()
                assert errors == []


def test_the_tool_search_box_ranks_as_tool_search_does(served: Served) -> None:
    with browser() as chromium, page_at(chromium) as (page, errors):
        page.goto(served.base + "/admin/tools")
        first = page.locator("#tool-rows tbody tr").first
        assert "mcp__toolbox__add" in first.inner_text()  # listed by name before a search
        page.get_by_label("Search tools").fill("environment variable")
        first.filter(has_text="mcp__toolbox__env").wait_for(timeout=15_000)
        assert "q=environment%20variable" in page.url  # HTMX pushed the search to the address
        screenshot(page, "tools-search-desktop")
        page.get_by_label("Search tools").fill("always fails with the reason")
        page.get_by_label("Search tools").press("Enter")
        first.filter(has_text="mcp__toolbox__fail").wait_for(timeout=15_000)
        assert errors == []


def test_a_server_is_disabled_and_enabled_from_its_page(served: Served) -> None:
    path = served.tmp_path / "config.toml"
    with browser() as chromium, page_at(chromium, "phone") as (page, errors):
        page.goto(served.base + "/admin/servers")
        row = page.locator("#server-toolbox")
        row.get_by_role("button", name="Disable").click()
        page.get_by_role("status").filter(has_text="Server toolbox disabled.").wait_for()
        assert tomllib.loads(path.read_text())["servers"]["toolbox"]["enabled"] is False
        screenshot(page, "servers-disabled-phone")
        page.locator("#server-toolbox").get_by_role("button", name="Enable").click()
        page.get_by_role("status").filter(has_text="Server toolbox enabled.").wait_for()
        assert "enabled" not in tomllib.loads(path.read_text())["servers"]["toolbox"]
        assert errors == []

"""The admin UI's security, tried against a real ``pegboard serve --http`` and ``pegboard ui``:
the gateway's token or an OAuth admin, Host/Origin checks on loopback, CSRF on every state
change, a CSP without inline script, and no secret on any page."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.admin.served import Served, csrf_of, serving
from tests.gateway.harness import sdk_server

TOKEN = "admin-test-token-5f2c"
SECRET = "sk-live-secret-value-91d0"
PAGES = ["/", "/servers", "/tools", "/tools?q=echo", "/audit", "/sessions", "/config"]


def config() -> dict[str, object]:
    toolbox = sdk_server() | {"env": {"API_KEY": SECRET}, "force_prompt_tools": ["echo"]}
    return {"servers": {"toolbox": toolbox}}


@pytest.fixture(scope="module")
def with_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp_path = tmp_path_factory.mktemp("admin-token")
    with serving(tmp_path, config(), env={"PEGBOARD_TOKEN": TOKEN}) as served:
        yield served


@pytest.fixture(scope="module")
def open_locally(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp_path = tmp_path_factory.mktemp("admin-local")
    with serving(tmp_path, config()) as served:
        yield served


def logged_in(served: Served, token: str = TOKEN) -> tuple[dict[str, str], str]:
    """The session cookie a login with ``token`` sets, and the CSRF token of its pages."""
    with served.client() as http:
        reply = http.post("/admin/login", data={"token": token})
        assert reply.status_code == 303, reply.text
        cookies = dict(reply.cookies)
    with served.client(cookies=cookies) as http:
        page = http.get("/admin/servers")
        assert page.status_code == 200
        return cookies, csrf_of(page.text)


def test_without_the_token_pages_send_to_the_login_and_a_wrong_token_is_refused(
    with_token: Served,
) -> None:
    with with_token.client() as http:
        anonymous = http.get("/admin/servers")
        assert anonymous.status_code == 303
        assert anonymous.headers["location"] == "/admin/login?next=/admin/servers"
        wrong = http.get("/admin/", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        assert http.post("/admin/login", data={"token": "nope"}).status_code == 401
        assert http.post("/admin/servers/toolbox/disable").status_code == 401
        right = http.get("/admin/", headers={"Authorization": f"Bearer {TOKEN}"})
        assert right.status_code == 200
        assert "Overview" in right.text
        # the MCP endpoint beside it still wants the token
        assert http.post("/mcp", json={}).status_code == 401


def test_a_state_change_needs_the_sessions_csrf_token_and_the_same_origin(
    with_token: Served,
) -> None:
    cookies, csrf = logged_in(with_token)
    _, other_csrf = logged_in(with_token)
    assert other_csrf != csrf
    path = with_token.tmp_path / "config.toml"
    with with_token.client(cookies=cookies) as http:
        action = "/admin/servers/toolbox/disable"
        assert http.post(action).status_code == 403
        assert http.post(action, data={"csrf": "forged"}).status_code == 403
        assert http.post(action, data={"csrf": other_csrf}).status_code == 403
        evil = {"Origin": "http://evil.example"}
        assert http.post(action, data={"csrf": csrf}, headers=evil).status_code == 403
        assert "enabled" not in tomllib.loads(path.read_text())["servers"]["toolbox"]
        done = http.post(action, data={"csrf": csrf}, headers={"Origin": with_token.base})
        assert done.status_code == 303
        assert done.headers["location"] == "/admin/servers?done=disabled&id=toolbox"
        assert tomllib.loads(path.read_text())["servers"]["toolbox"]["enabled"] is False
        again = http.post("/admin/servers/toolbox/enable", data={"csrf": csrf})
        assert again.status_code == 303
        assert "enabled" not in tomllib.loads(path.read_text())["servers"]["toolbox"]


def test_no_page_shows_the_token_or_a_configured_secret(with_token: Served) -> None:
    cookies, _ = logged_in(with_token)
    with with_token.client(cookies=cookies) as http:
        for page in [*PAGES, "/servers/toolbox/logs"]:
            reply = http.get(f"/admin{page}")
            assert reply.status_code == 200, page
            assert TOKEN not in reply.text, page
            assert SECRET not in reply.text, page
        assert "API_KEY" in http.get("/admin/config").text  # the name is shown, masked


def test_on_loopback_without_a_token_a_foreign_host_or_origin_is_refused(
    open_locally: Served,
) -> None:
    with open_locally.client() as http:
        for path in ("/admin/", "/admin/static/admin.css", "/admin/login"):
            assert http.get(path, headers={"Host": "evil.example"}).status_code == 421, path
            rebound = {"Host": f"evil.example:{open_locally.base.rsplit(':', 1)[1]}"}
            assert http.get(path, headers=rebound).status_code == 421, path
        assert http.get("/admin/", headers={"Origin": "http://evil.example"}).status_code == 403
        assert http.get("/admin/", headers={"Host": "localhost"}).status_code == 200


def test_on_loopback_without_a_token_a_post_without_the_pages_session_is_refused(
    open_locally: Served,
) -> None:
    path = open_locally.tmp_path / "config.toml"
    with open_locally.client() as http:
        assert http.post("/admin/servers/toolbox/disable").status_code == 403
        page = http.get("/admin/servers")  # the first page opens a local session
        csrf = csrf_of(page.text)
        assert http.post("/admin/servers/toolbox/disable").status_code == 403
        assert "enabled" not in tomllib.loads(path.read_text())["servers"]["toolbox"]
        done = http.post("/admin/servers/toolbox/disable", data={"csrf": csrf})
        assert done.status_code == 303
        assert tomllib.loads(path.read_text())["servers"]["toolbox"]["enabled"] is False
        http.post("/admin/servers/toolbox/enable", data={"csrf": csrf})


INLINE_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.I)


def test_every_page_has_a_csp_without_inline_script_and_no_inline_script(
    open_locally: Served,
) -> None:
    with open_locally.client() as http:
        for page in PAGES:
            reply = http.get(f"/admin{page}")
            csp = reply.headers["content-security-policy"]
            assert "script-src 'self'" in csp
            assert "unsafe-inline" not in csp
            assert "unsafe-eval" not in csp
            assert "frame-ancestors 'none'" in csp
            assert reply.headers["x-frame-options"] == "DENY"
            scripts = re.findall(r"<script\b[^>]*>", reply.text)
            assert scripts, page
            assert all(" src=" in s for s in scripts), page
            assert re.search(r"<script\b[^>]*>(?!</script>)", reply.text) is None, page
            assert INLINE_HANDLER.search(reply.text) is None, page
            cookie = reply.headers.get("set-cookie", "")
            if cookie:
                assert "HttpOnly" in cookie
                assert "SameSite=strict" in cookie


def test_pegboard_ui_lets_in_only_the_browser_with_its_one_time_key(tmp_path: Path) -> None:
    command = ("ui", "--port", "0", "--no-open")
    with serving(tmp_path, config(), command=command) as served:
        assert "/admin/login?key=" in served.url
        with served.client() as http:
            assert http.get("/admin/").status_code == 303
            assert http.get("/admin/login?key=wrong").status_code == 401
            assert http.post("/admin/servers/toolbox/disable").status_code == 401
            opened = http.get(served.url.removeprefix(served.base))
            assert opened.status_code == 303
            assert opened.headers["location"] == "/admin/"
            page = http.get("/admin/servers")
            assert page.status_code == 200
            assert "toolbox" in page.text
            assert http.get("/admin/", headers={"Host": "evil.example"}).status_code == 421

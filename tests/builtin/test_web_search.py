"""web_search providers against servers on 127.0.0.1 answering each provider's JSON shape."""

from __future__ import annotations

import json
import logging

import pytest

from pegboard.builtin.ddgs_provider import DdgsProvider
from pegboard.builtin.web_search import build_provider, provider_for, web_search
from pegboard.config.model import PegboardConfig, WebSearchProviderConfig
from pegboard.errors import ToolExecutionError
from tests.builtin.local_http import LocalServer, Reply

pytestmark = pytest.mark.anyio

KEY = "sk-test-0123456789"


def _json(data: object, status: int = 200, **headers: str) -> Reply:
    return Reply(status, {"content-type": "application/json", **headers}, json.dumps(data).encode())


SEARXNG_OK = {
    "query": "pets",
    "number_of_results": 2,
    "results": [
        {"url": "https://a.example/", "title": "A", "content": "first", "engine": "bing"},
        {"url": "https://b.example/", "title": "B", "engine": "ddg"},
    ],
    "answers": [],
    "suggestions": [],
}
BRAVE_OK = {
    "type": "search",
    "query": {"original": "pets"},
    "web": {
        "type": "search",
        "results": [{"title": "A", "url": "https://a.example/", "description": "first"}],
    },
}
TAVILY_OK = {
    "query": "pets",
    "answer": None,
    "images": [],
    "results": [{"title": "A", "url": "https://a.example/", "content": "first", "score": 0.9}],
    "response_time": 0.5,
}
EXPECTED_A = {"id": 1, "title": "A", "url": "https://a.example/", "content": "first"}


def _provider(kind: str, server: LocalServer, monkeypatch: pytest.MonkeyPatch, timeout: float = 5):
    monkeypatch.setenv("TEST_SEARCH_KEY", KEY)
    key_env = None if kind == "searxng" else "TEST_SEARCH_KEY"
    settings = WebSearchProviderConfig(
        type=kind, url=server.url(""), api_key_env=key_env, timeout=timeout
    )
    return build_provider("mine", settings)


async def test_searxng_results_are_numbered_from_one(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.route("/search", _json(SEARXNG_OK))
    results = await web_search(_provider("searxng", server, monkeypatch), "pets", 5)
    assert results == [
        EXPECTED_A,
        {"id": 2, "title": "B", "url": "https://b.example/", "content": ""},
    ]
    assert server.seen[0].path == "/search?q=pets&format=json"


async def test_brave_sends_the_key_header_and_reads_web_results(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.route("/res/v1/web/search", _json(BRAVE_OK))
    results = await web_search(_provider("brave", server, monkeypatch), "pets", 3)
    assert results == [EXPECTED_A]
    (seen,) = server.seen
    assert seen.path == "/res/v1/web/search?q=pets&count=3"
    assert seen.headers["x-subscription-token"] == KEY


async def test_brave_without_web_results_means_nothing_found(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.route("/res/v1/web/search", _json({"type": "search", "query": {"original": "zz"}}))
    assert await web_search(_provider("brave", server, monkeypatch), "zz") == []


async def test_tavily_posts_the_query_with_a_bearer_key(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.route("/search", _json(TAVILY_OK))
    results = await web_search(_provider("tavily", server, monkeypatch), "pets", 2)
    assert results == [EXPECTED_A]
    (seen,) = server.seen
    assert seen.method == "POST"
    assert json.loads(seen.body) == {"query": "pets", "max_results": 2, "search_depth": "basic"}
    assert seen.headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("kind", "path"),
    [("searxng", "/search"), ("brave", "/res/v1/web/search"), ("tavily", "/search")],
)
async def test_a_rate_limit_is_an_error_saying_to_wait(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch, kind: str, path: str
) -> None:
    server.route(path, _json({"error": "too many"}, 429, **{"retry-after": "30"}))
    with pytest.raises(ToolExecutionError) as caught:
        await web_search(_provider(kind, server, monkeypatch), "pets")
    assert str(caught.value) == (
        f"web_search provider 'mine' ({kind}) is rate-limited (HTTP 429); "
        "wait 30 s before searching again"
    )


async def test_a_brave_error_body_is_reported_and_the_key_redacted(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = {
        "type": "ErrorResponse",
        "error": {"status": 422, "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": f"bad {KEY}"},
    }
    server.route("/res/v1/web/search", _json(body, 422))
    with pytest.raises(ToolExecutionError) as caught:
        await web_search(_provider("brave", server, monkeypatch), "pets")
    assert str(caught.value) == "web_search provider 'mine' (brave) answered HTTP 422: bad ***"


async def test_a_tavily_auth_error_is_reported(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = {"detail": {"error": "Unauthorized: missing or invalid API key."}}
    server.route("/search", _json(body, 401))
    with pytest.raises(ToolExecutionError, match=r"\(tavily\) answered HTTP 401: Unauthorized"):
        await web_search(_provider("tavily", server, monkeypatch), "pets")


async def test_a_provider_that_does_not_answer_in_time_is_an_error(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.route("/search", Reply(hang=True))
    with pytest.raises(ToolExecutionError) as caught:
        await web_search(_provider("searxng", server, monkeypatch, timeout=0.3), "pets")
    assert str(caught.value) == (
        "web_search provider 'mine' (searxng) did not answer within 0.3 s; "
        "try again or use another provider"
    )


async def test_an_unexpected_json_shape_is_an_error_not_an_empty_list(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.route("/search", _json({"unexpected": True}))
    with pytest.raises(ToolExecutionError, match="answered with JSON of an unexpected shape"):
        await web_search(_provider("searxng", server, monkeypatch), "pets")


async def test_a_missing_key_names_the_variable_and_no_value(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    config = PegboardConfig.model_validate(
        {"web_search": {"b": {"type": "brave", "api_key_env": "NO_SUCH_KEY"}}}
    )
    with pytest.raises(ToolExecutionError) as caught:
        provider_for(config, "b")
    assert str(caught.value) == (
        "web_search provider 'b' needs an API key: set the environment variable NO_SUCH_KEY"
    )


async def test_the_key_never_reaches_the_logs(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.route("/search", _json(TAVILY_OK))
    await web_search(_provider("tavily", server, monkeypatch), "pets")
    assert KEY not in caplog.text


def test_without_a_provider_the_key_less_ddgs_is_used() -> None:
    provider = provider_for(PegboardConfig())
    assert isinstance(provider, DdgsProvider)
    assert provider.name == "ddgs"


def test_the_first_configured_provider_is_the_default() -> None:
    config = PegboardConfig.model_validate(
        {
            "web_search": {
                "x": {"type": "searxng", "url": "http://127.0.0.1:1"},
                "y": {"type": "ddgs"},
            }
        }
    )
    assert provider_for(config).name == "x"
    assert provider_for(config, "y").name == "y"


DDG_HTML = b"""<html><body><div class="serp__results"><div id="links" class="results">
<div class="result results_links results_links_deep web-result">
 <div class="links_main links_deep result__body">
  <h2 class="result__title"><a class="result__a"
   href="https://pets.example/policy">Office pet policy</a></h2>
  <a class="result__snippet" href="https://pets.example/policy">Dogs are welcome on Fridays.</a>
 </div></div>
</div></div></body></html>"""


@pytest.fixture
def ddg_at(server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> LocalServer:
    """Point ddgs's DuckDuckGo engine at the local server (its real client and parser run)."""
    from ddgs.engines.duckduckgo import Duckduckgo

    monkeypatch.setattr(Duckduckgo, "search_url", server.url("/html/"))
    monkeypatch.delenv("DDGS_PROXY", raising=False)
    return server


async def test_ddgs_parses_a_recorded_duckduckgo_page(ddg_at: LocalServer) -> None:
    ddg_at.route("/html/", Reply(headers={"content-type": "text/html"}, body=DDG_HTML))
    provider = DdgsProvider("ddgs", timeout=5, backend="duckduckgo")
    assert await web_search(provider, "office pet policy", 5) == [
        {
            "id": 1,
            "title": "Office pet policy",
            "url": "https://pets.example/policy",
            "content": "Dogs are welcome on Fridays.",
        }
    ]
    (seen,) = ddg_at.seen
    assert seen.method == "POST"
    assert b"q=office+pet+policy" in seen.body


async def test_ddgs_refused_by_its_engine_is_an_error_not_an_empty_list(
    ddg_at: LocalServer,
) -> None:
    ddg_at.route("/html/", Reply(429, body=b"slow down"))
    provider = DdgsProvider("ddgs", timeout=5, backend="duckduckgo")
    with pytest.raises(ToolExecutionError, match=r"\(ddgs\) returned no results; its engines"):
        await web_search(provider, "office pet policy")


async def test_cancellation_propagates_instead_of_becoming_an_error(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio

    server.route("/search", Reply(hang=True))
    provider = _provider("searxng", server, monkeypatch, timeout=30)
    with anyio.move_on_after(0.2) as scope:
        await web_search(provider, "pets")
    assert scope.cancelled_caught

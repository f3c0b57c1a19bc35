"""The HTTP fast path (:mod:`pegboard.gateway.http_fast`): plain ``tools/call``, ``tools/list``
and ``ping`` of both eras answered without the SDK's dispatcher, after the same guards.

Two ``pegboard serve --http`` run the same config side by side: one as shipped, one with
``PEGBOARD_NO_FAST_CALLS=1`` (every request through the SDK: the route before the fast path).
Each guard test sends a request the fast path would take were it not for that guard, to both,
and expects the same refusal. The positive controls show the fast server answering the plain
request itself (one JSON body) where the SDK route streams it (``text/event-stream``), with
the same result.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from pegboard.calls.audit_log import AUDIT_FILE
from pegboard.gateway import sessions
from pegboard.gateway.http_fast import KEEPALIVE_S
from pegboard.gateway.sessions import KEY_NAME
from tests.gateway.harness import (
    PEGBOARD,
    STARTUP_BOUND,
    gateway_env,
    read_audit,
    scripted_elicitation,
    scripted_server,
    sdk_server,
    text_of,
    victim_server,
    write_config,
)

REAL_TIME = time.time
TOKEN = "fast-path-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ECHO = {"name": "mcp__toolbox__echo", "arguments": {"text": "hi"}}
LIMITED = "mcp__toolbox__media"
LIMIT = 2
CONFIG = {
    "servers": {
        "toolbox": sdk_server() | {"force_prompt_tools": ["add"]},
        "victim": victim_server(),
        "routing": scripted_server("--tools", "0", "--mode", "routed"),
    },
    "limits": {"per_tool": {LIMITED: LIMIT}},
}


@dataclass
class Served:
    url: str
    data: Path
    process: subprocess.Popen[str]
    next_id: int = 1
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))

    def post(self, body: Any, headers: dict[str, str], **kwargs: Any) -> httpx.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.http.post(self.url, content=content, headers=headers, **kwargs)

    def open_session(self, say_initialized: bool = True) -> dict[str, str]:
        """A handshake-era session of a client that cannot elicit: its request headers."""
        answer = self.post(_request(0, "initialize", INIT), AUTH | ACCEPT)
        assert answer.status_code == 200, answer.text
        assert _message(answer)["result"]["protocolVersion"] == LEGACY
        headers = (
            AUTH
            | ACCEPT
            | {
                "mcp-session-id": answer.headers["mcp-session-id"],
                "mcp-protocol-version": LEGACY,
            }
        )
        if say_initialized:
            assert self.post(INITIALIZED, headers).status_code == 202
        return headers

    def call(self, name: str, arguments: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
        self.next_id += 1
        body = _request(self.next_id, "tools/call", {"name": name, "arguments": arguments})
        return self.post(body, headers)

    def audit(self, count: int) -> list[dict[str, Any]]:
        return read_audit(self.data / AUDIT_FILE, lambda records: len(records) >= count)

    def audit_since(self, start: float, tool: str) -> list[dict[str, Any]]:
        """The records of ``tool``'s calls that arrived after ``start`` (wall clock), once
        there is one: an earlier call's record may still be on its way (the writer batches)."""

        def since(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [r for r in records if r["tool"] == tool and r["time"] >= start]

        return since(read_audit(self.data / AUDIT_FILE, lambda records: bool(since(records))))


def _request(request_id: Any, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


def _parser_of(pid: int) -> str:
    """Which HTTP parser a serving process runs: httptools' C module mapped, or h11."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return "httptools" if "/httptools/parser/" in maps else "h11"


def _start(tmp_path: Path, extra_env: dict[str, str]) -> Served:
    write_config(tmp_path, CONFIG)
    env = gateway_env(tmp_path) | {"PEGBOARD_TOKEN": TOKEN} | extra_env
    args = [PEGBOARD, "serve", "--http", "--port", "0", "--no-defer"]
    subprocess.run([PEGBOARD, "servers", "refresh"], env=env, check=True, capture_output=True)
    process = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    deadline = time.monotonic() + STARTUP_BOUND
    for line in process.stderr:
        if line.startswith("pegboard serving MCP on "):
            url = line.removeprefix("pegboard serving MCP on ").strip()
            # keep reading stderr so the server never blocks on a full pipe
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return Served(url, tmp_path / "data", process)
        assert time.monotonic() < deadline, "pegboard serve did not start"
    raise AssertionError(f"pegboard serve exited ({process.wait()})")


@dataclass
class Pair:
    fast: Served
    sdk: Served

    def both(self) -> tuple[Served, Served]:
        return self.fast, self.sdk


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    fast = _start(tmp_path_factory.mktemp("fast"), {})
    sdk = _start(tmp_path_factory.mktemp("sdk"), {"PEGBOARD_NO_FAST_CALLS": "1"})
    try:
        yield Pair(fast, sdk)
    finally:
        for served in (fast, sdk):
            served.http.close()
            served.process.terminate()
            served.process.wait(timeout=15)


def test_the_http_extra_is_used_when_installed_and_h11_serves_the_fast_path_without_it(
    pair: Pair, tmp_path: Path
) -> None:
    assert _parser_of(pair.fast.process.pid) == "httptools"  # `pip install 'pegboard[http]'`
    hidden = tmp_path / "hide" / "httptools"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('not installed here')\n")
    (tmp_path / "h11").mkdir()
    served = _start(tmp_path / "h11", {"PYTHONPATH": str(hidden.parent)})
    try:
        headers = served.open_session()
        assert _parser_of(served.process.pid) == "h11"
        answers = [
            served.call("mcp__toolbox__echo", {"text": "pure"}, headers),
            served.post(_request(2, "tools/list", None), headers),
            served.post(_request(3, "ping", None), headers),
        ]
        assert [a.headers["content-type"] for a in answers] == ["application/json"] * 3
        assert answers[0].json()["result"]["content"] == [{"type": "text", "text": "pure"}]
        assert "mcp__toolbox__echo" in [t["name"] for t in answers[1].json()["result"]["tools"]]
        assert answers[2].json()["result"] == {}
    finally:
        served.http.close()
        served.process.terminate()
        served.process.wait(timeout=15)


def _message(answer: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of an answer, a JSON body or the last event of a stream."""
    if answer.headers["content-type"].startswith("text/event-stream"):
        data = [line[6:] for line in answer.text.splitlines() if line.startswith("data: ")]
        return dict(json.loads(data[-1]))
    return dict(answer.json())


def _envelope(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }


def _modern_call(
    served: Served, name: str, arguments: dict[str, Any], capabilities: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    served.next_id += 1
    params = {"name": name, "arguments": arguments, "_meta": _envelope(capabilities)}
    headers = (
        AUTH
        | ACCEPT
        | {
            "mcp-protocol-version": MODERN,
            "mcp-method": "tools/call",
            "mcp-name": name,
        }
    )
    return _request(served.next_id, "tools/call", params), headers


def test_plain_requests_of_both_eras_are_answered_with_the_sdk_routes_results(pair: Pair) -> None:
    answers: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for served in pair.both():
        headers = served.open_session()
        got = answers.setdefault("fast" if served is pair.fast else "sdk", [])
        for body in (
            _request(11, "tools/call", {"name": "mcp__toolbox__echo", "arguments": {"text": "hi"}}),
            _request(12, "tools/list", None),
            _request("p", "ping", {}),
        ):
            answer = served.post(body, headers)
            assert answer.status_code == 200, answer.text
            got.append((answer.headers["content-type"], _message(answer)))
        body, modern = _modern_call(served, "mcp__toolbox__echo", {"text": "hi"})
        answer = served.post(body, modern)
        got.append((answer.headers["content-type"], _message(answer) | {"id": None}))
    fast, sdk = answers["fast"], answers["sdk"]
    assert [m for _, m in fast] == [m for _, m in sdk]
    assert fast[0][1]["result"]["content"] == [{"type": "text", "text": "hi"}]
    assert fast[3][1]["result"]["content"] == [{"type": "text", "text": "hi"}]
    # Handshake era: the fast path answers one JSON body, the SDK an event stream.
    assert [t for t, _ in fast[:3]] == ["application/json"] * 3
    assert all(t.startswith("text/event-stream") for t, _ in sdk[:3])


def test_a_call_without_params_gets_the_sdk_routes_answer(pair: Pair) -> None:
    answers = []
    for served in pair.both():
        headers = served.open_session()
        answer = served.post(_request(8, "tools/call", None), headers)
        answers.append((answer.status_code, _message(answer)))
    assert answers[0] == answers[1]
    status, message = answers[0]
    assert status == 200
    assert message["error"]["code"] == -32602, message


def _no_token(h: dict[str, str], b: Any) -> tuple[dict[str, str], Any]:
    return {k: v for k, v in h.items() if k != "authorization"}, b


def _with(**changed: str) -> Callable[[dict[str, str], Any], tuple[dict[str, str], Any]]:
    def change(h: dict[str, str], b: Any) -> tuple[dict[str, str], Any]:
        return h | {k.replace("_", "-"): v for k, v in changed.items()}, b

    return change


def _without(name: str) -> Callable[[dict[str, str], Any], tuple[dict[str, str], Any]]:
    def change(h: dict[str, str], b: Any) -> tuple[dict[str, str], Any]:
        return {k: v for k, v in h.items() if k != name}, b

    return change


def _body(
    edit: Callable[[dict[str, Any]], Any],
) -> Callable[[dict[str, str], Any], tuple[dict[str, str], Any]]:
    return lambda h, b: (h, edit(b))


def _twice(
    name: str, first: str | None = None, then: str | None = None
) -> Callable[[dict[str, str], Any], Any]:
    """The headers with ``name`` given twice, ``first`` then ``then`` (None: the value the
    headers had): pegboard's guards read a header's last value, Starlette and the SDK its
    first."""

    def change(h: dict[str, str], b: Any) -> tuple[list[tuple[str, str]], Any]:
        rest = [(k, v) for k, v in h.items() if k != name]
        return [*rest, (name, first or h[name]), (name, then or h[name])], b

    return change


LEGACY_GUARDS: dict[str, tuple[Callable[[dict[str, str], Any], Any], int]] = {
    "no bearer token": (_no_token, 401),
    "a wrong bearer token": (_with(authorization="Bearer nope"), 401),
    "a Host of another site (DNS rebinding)": (_with(host="evil.example:80"), 421),
    "a Host that is no plain host and port": (_with(host="127.0.0.1:80@evil.example"), 421),
    "an Origin of another site": (_with(origin="http://evil.example"), 403),
    "an Accept without event streams": (_with(accept="application/json"), 406),
    "a Content-Type that is not JSON": (_with(content_type="text/plain"), 400),
    "an unknown session id": (_with(mcp_session_id="pbs1.unknown"), 404),
    "no session id": (_without("mcp-session-id"), 400),
    "an unsupported protocol version header": (_with(mcp_protocol_version="1999-01-01"), 400),
    "a request id that is a fraction": (_body(lambda b: b | {"id": 1.5}), 400),
    "a body over the size limit": (
        _body(lambda b: b | {"params": {"name": "x", "arguments": {"text": "a" * 4_200_000}}}),
        413,
    ),
    # Each header the fast route reads, given twice: the layer that reads its last value
    # (the token and shape guards) or its first (the SDK) refuses it on both routes.
    "a wrong bearer token after the right one": (_twice("authorization", then="Bearer x"), 401),
    "a Host that is no plain host after a good one": (
        _twice("host", "127.0.0.1", "127.0.0.1:80@evil.example"),
        421,
    ),
    "a Host of another site before a good one": (
        _twice("host", "evil.example:80", "127.0.0.1"),
        421,
    ),
    "an Origin of another site before a good one": (
        _twice("origin", "http://evil.example", "http://127.0.0.1"),
        403,
    ),
    "an Accept without event streams before the good one": (
        _twice("accept", "application/json"),
        406,
    ),
    "a Content-Type that is not JSON before the good one": (
        _twice("content-type", "text/plain"),
        400,
    ),
    "an unknown session id before the good one": (_twice("mcp-session-id", "pbs1.unknown"), 404),
    "an unsupported protocol version before the good one": (
        _twice("mcp-protocol-version", "1999-01-01"),
        400,
    ),
}


@pytest.mark.parametrize("guard", list(LEGACY_GUARDS))
def test_each_guard_refuses_a_plain_handshake_era_call_as_the_sdk_route_does(
    pair: Pair, guard: str
) -> None:
    change, status = LEGACY_GUARDS[guard]
    refusals = []
    for served in pair.both():
        headers = served.open_session()
        body = _request(7, "tools/call", {"name": "mcp__toolbox__echo", "arguments": {"text": "x"}})
        allowed = served.post(body, headers)  # the control: without the guard it is answered
        assert allowed.status_code == 200, allowed.text
        headers, body = change(headers, body)
        if isinstance(headers, list):  # a header given twice (httpx refuses a second Host)
            refusals.append(_sent_as_is(served, headers, body))
            continue
        answer = served.post(body, headers)
        refusals.append((answer.status_code, answer.text))
    assert refusals[0] == refusals[1]
    assert refusals[0][0] == status, refusals[0]


def _sent_as_is(served: Served, headers: list[tuple[str, str]], body: Any) -> tuple[int, str]:
    """POST with exactly these headers (a Host only if given), on a connection of its own."""
    url = urlsplit(served.url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
    try:
        connection.putrequest("POST", url.path, skip_host=True, skip_accept_encoding=True)
        content = json.dumps(body).encode()
        for name, value in [*headers, ("content-length", str(len(content)))]:
            connection.putheader(name, value)
        if not any(name == "host" for name, _ in headers):
            connection.putheader("host", url.netloc)
        connection.endheaders(content)
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


def test_a_call_sent_right_after_the_initialize_answer_takes_the_fast_path(pair: Pair) -> None:
    """The session is recorded when its initialize is committed, which is before its answer
    is written: a call sent as soon as that answer arrives, with no
    ``notifications/initialized`` at all (which the SDK acknowledges before reading it), finds
    the session and is answered on the fast path, every time; the SDK route answers it too."""
    for served in pair.both():
        kinds, messages = set(), []
        for _ in range(12):
            headers = served.open_session(say_initialized=False)
            answer = served.post(_request(3, "tools/call", ECHO), headers)
            assert answer.status_code == 200, answer.text
            kinds.add(answer.headers["content-type"].split(";")[0])
            messages.append(_message(answer))
        assert messages == [{"jsonrpc": "2.0", "id": 3, "result": _ECHOED}] * 12
        assert kinds == {"application/json" if served is pair.fast else "text/event-stream"}


_ECHOED = {
    "content": [{"type": "text", "text": "hi"}],
    "structuredContent": {"result": "hi"},
    "isError": False,
}


def test_a_session_whose_initialize_was_refused_is_not_taken_until_its_gate_opens(
    pair: Pair,
) -> None:
    """An initialize the SDK refuses (client info without a version) is answered with an
    error inside a 200 event stream, so the SDK keeps the session, but commits nothing: the
    fast path does not take its calls (the SDK refuses them, as without the fast path) until a
    bare ``notifications/initialized`` opens it, as it opens the SDK's gate. The SDK reads the
    notification before the next request it is handed (one stream, in order): after that
    request the session is recorded, and its next plain call is the fast path's."""
    init = INIT | {"clientInfo": {"name": "no version"}}
    for served in pair.both():
        opened = served.post(_request(0, "initialize", init), AUTH | ACCEPT)
        assert opened.status_code == 200
        assert _message(opened)["error"]["code"] == -32602
        headers = AUTH | ACCEPT | {"mcp-session-id": opened.headers["mcp-session-id"]}
        headers["mcp-protocol-version"] = LEGACY
        refused = served.post(_request(1, "tools/call", ECHO), headers)
        assert refused.headers["content-type"].startswith("text/event-stream")
        assert _message(refused)["error"] == {
            "code": -32602,
            "message": "Invalid request parameters",
            "data": "",
        }
        assert served.post(INITIALIZED, headers).status_code == 202
        progress = {**ECHO, "_meta": {"progressToken": "p"}}  # not plain: the SDK's
        read_after = served.post(_request(2, "tools/call", progress), headers)
        assert read_after.headers["content-type"].startswith("text/event-stream")
        assert _message(read_after)["result"] == _ECHOED
        answer = served.post(_request(3, "tools/call", ECHO), headers)
        assert _message(answer) == {"jsonrpc": "2.0", "id": 3, "result": _ECHOED}
        fast = answer.headers["content-type"] == "application/json"
        assert fast is (served is pair.fast), answer.headers["content-type"]


def test_a_session_is_recorded_once_however_many_requests_it_sends(pair: Pair) -> None:
    """The admin page's live sessions (the gateway's record of opened sessions) list a session
    once, named by its client, after fast and SDK requests alike; a session whose initialize
    was refused and that never opened is not listed."""
    served = pair.fast
    headers = served.open_session()
    for body in (
        _request(5, "tools/call", ECHO),
        _request(6, "tools/list", None),
        _request(7, "tools/call", {**ECHO, "_meta": {"progressToken": "p"}}),
        _request(8, "tools/call", ECHO),
    ):
        assert served.post(body, headers).status_code == 200
    refused = served.post(
        _request(0, "initialize", INIT | {"clientInfo": {"name": "never opened"}}), AUTH | ACCEPT
    )
    page = served.http.get(served.url.removesuffix("/mcp") + "/admin/sessions", headers=AUTH)
    assert page.status_code == 200, page.text
    live = page.text.split("</table>")[0]
    assert live.count(f"<code>{headers['mcp-session-id'][:12]}</code>") == 1
    assert f"<code>{refused.headers['mcp-session-id'][:12]}</code>" not in live
    assert "never opened" not in live


def test_a_session_sealed_elsewhere_is_revived_and_an_expired_one_refused(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = []
    for served in pair.both():
        headers = served.open_session()
        with sqlite3.connect(served.data / "catalog.sqlite3") as db:
            (key,) = db.execute("SELECT value FROM secrets WHERE name = ?", (KEY_NAME,)).fetchone()
        state = sessions.SessionSeal(key).open(headers["mcp-session-id"])
        assert state is not None
        state.pop("iat")
        # the same session as another replica on this store would seal it now: revived here
        elsewhere = sessions.SessionSeal(key).seal(state)
        revived = served.call(
            "mcp__toolbox__echo", {"text": "x"}, headers | {"mcp-session-id": elsewhere}
        )
        # ... and sealed a day and a minute ago: expired
        monkeypatch.setattr(sessions.time, "time", _aged)
        aged = sessions.SessionSeal(key).seal(state)
        monkeypatch.undo()
        expired = served.call(
            "mcp__toolbox__echo", {"text": "x"}, headers | {"mcp-session-id": aged}
        )
        answers.append((_message(revived) | {"id": None}, expired.status_code, expired.text))
        if served is pair.fast:  # the revived session's plain call took the fast path
            assert revived.headers["content-type"] == "application/json"
    assert answers[0] == answers[1]
    revived, status, _ = answers[0]
    assert revived["result"]["content"] == [{"type": "text", "text": "x"}]
    assert status == 404


def _aged() -> float:
    return REAL_TIME() - sessions.SESSION_TTL_S - 60


def _duplicated_method(h: dict[str, str], b: Any) -> tuple[list[tuple[str, str]], Any]:
    return [*h.items(), ("mcp-method", "tools/call")], b


ROUTED = "mcp__routing__routed"


@pytest.mark.parametrize("header", ["eu", "us", None])
def test_mcp_param_headers_are_checked_against_the_callers_listing_as_by_the_sdk(
    pair: Pair, header: str | None
) -> None:
    answers = []
    for served in pair.both():
        body, headers = _modern_call(served, ROUTED, {"region": "eu"})
        body["id"] = 9
        if header is not None:
            headers = headers | {"mcp-param-region": header}
        answer = served.post(body, headers)
        answers.append((answer.status_code, _message(answer)))
    assert answers[0] == answers[1]
    status, message = answers[0]
    if header == "eu":  # header and argument agree: answered (the scripted tool echoes)
        assert status == 200, message
        assert "error" not in message
    else:
        assert status == 400, message
        assert "Mcp-Param-Region" in message["error"]["message"]


MODERN_GUARDS: dict[str, tuple[Callable[[dict[str, str], Any], Any], int]] = {
    "no bearer token": (_no_token, 401),
    "a Host of another site (DNS rebinding)": (_with(host="evil.example:80"), 421),
    "an Origin of another site": (_with(origin="http://evil.example"), 403),
    "an Accept without event streams": (_with(accept="application/json"), 406),
    "a Content-Type that is not JSON": (_with(content_type="text/plain"), 400),
    "a method header that disagrees with the body": (_with(mcp_method="tools/list"), 400),
    "a name header that disagrees with the body": (_with(mcp_name="mcp__toolbox__add"), 400),
    "a routing header sent twice": (_duplicated_method, 400),
    "a version header that disagrees with the envelope": (
        _with(mcp_protocol_version="2099-01-01"),
        400,
    ),
    "an envelope without capabilities": (
        _body(
            lambda b: (
                b
                | {
                    "params": b["params"]
                    | {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}
                }
            )
        ),
        400,
    ),
    "a request id that is null": (_body(lambda b: b | {"id": None}), 400),
}


@pytest.mark.parametrize("guard", list(MODERN_GUARDS))
def test_each_guard_refuses_a_plain_modern_call_as_the_sdk_route_does(
    pair: Pair, guard: str
) -> None:
    change, status = MODERN_GUARDS[guard]
    refusals = []
    for served in pair.both():
        body, headers = _modern_call(served, "mcp__toolbox__echo", {"text": "x"})
        body["id"] = 5
        allowed = served.post(body, headers)
        assert allowed.status_code == 200, allowed.text
        changed, body = change(headers, body)
        content = json.dumps(body).encode()
        answer = served.http.post(served.url, content=content, headers=changed)
        refusals.append((answer.status_code, answer.text))
    assert refusals[0] == refusals[1]
    assert refusals[0][0] == status, refusals[0]


def test_a_gated_call_of_a_client_that_cannot_elicit_gets_the_same_refusal(pair: Pair) -> None:
    refusals = []
    for served in pair.both():
        headers = served.open_session()
        legacy = _message(served.call("mcp__toolbox__add", {"a": 1, "b": 2}, headers))
        body, modern_headers = _modern_call(served, "mcp__toolbox__add", {"a": 1, "b": 2})
        modern = _message(served.post(body, modern_headers))
        # the queued question's id is random: the rest of the text is the same
        text = json.dumps((legacy["result"], modern["result"]))
        refusals.append(json.loads(re.sub(r"\(request [0-9a-f]+\)", "(request -)", text)))
    assert refusals[0] == refusals[1]
    legacy_result, modern_result = refusals[0]
    assert legacy_result["isError"] is True
    assert "mcp__toolbox__add" in legacy_result["content"][0]["text"]
    assert modern_result["isError"] is True


def test_an_eliciting_modern_client_gets_its_approval_round_from_the_sdk_route(
    pair: Pair,
) -> None:
    rounds = []
    for served in pair.both():
        body, headers = _modern_call(
            served, "mcp__toolbox__add", {"a": 1, "b": 2}, {"elicitation": {"form": {}}}
        )
        result = _message(served.post(body, headers))["result"]
        rounds.append(result)
    for result in rounds:
        assert result["resultType"] == "input_required", result
        assert "requestState" in result
    assert rounds[0].keys() == rounds[1].keys()


def test_rate_limits_refuse_fast_calls_as_sdk_calls(pair: Pair) -> None:
    texts = []
    for served in pair.both():
        headers = served.open_session()
        answers = [_message(served.call(LIMITED, {}, headers)) for _ in range(LIMIT + 1)]
        assert [a["result"].get("isError", False) for a in answers] == [False] * LIMIT + [True]
        texts.append(answers[-1]["result"]["content"][0]["text"])
    assert texts[0] == texts[1]
    assert "limit" in texts[0]


def test_fast_calls_write_the_same_audit_records(pair: Pair) -> None:
    records = []
    for served in pair.both():
        start = time.time()
        headers = served.open_session()
        served.call("mcp__toolbox__echo", {"text": "audited"}, headers)
        found = served.audit_since(start, "mcp__toolbox__echo")
        assert len(found) == 1, found
        records.append(found[0])
    varying = {"ts", "time", "duration", "call_id", "session_id", "id", "started", "finished"}
    fast, sdk = ({k: v for k, v in r.items() if k not in varying} for r in records)
    assert fast == sdk
    assert fast["tool"] == "mcp__toolbox__echo"
    assert str(fast["principal"]).startswith("bearer:")


def _requests_counted(served: Served, method: str, era: str) -> float:
    text = served.http.get(served.url.replace("/mcp", "/metrics"), headers=AUTH).text
    for line in text.splitlines():
        labels = (f'method="{method}"', f'era="{era}"')
        if line.startswith("pegboard_mcp_requests_total{") and all(x in line for x in labels):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_fast_requests_are_counted_in_the_metrics(pair: Pair) -> None:
    served = pair.fast
    headers = served.open_session()
    calls, lists = (_requests_counted(served, m, "handshake") for m in ("tools/call", "tools/list"))
    for _ in range(3):
        served.call("mcp__toolbox__echo", {"text": "m"}, headers)
    assert served.post(_request(40, "tools/list", None), headers).status_code == 200
    assert _requests_counted(served, "tools/call", "handshake") == calls + 3
    assert _requests_counted(served, "tools/list", "handshake") == lists + 1


def _post_into(
    found: list[httpx.Response], served: Served, body: Any, headers: dict[str, str]
) -> None:
    found.append(served.post(body, headers))


def test_a_handshake_era_cancel_ends_a_fast_call_as_the_sdk_does(
    pair: Pair, tmp_path: Path
) -> None:
    answers = []
    for index, served in enumerate(pair.both()):
        fifo = tmp_path / f"started-{index}"
        os.mkfifo(fifo)
        headers = served.open_session()
        found: list[httpx.Response] = []
        body = _request(
            77, "tools/call", {"name": "mcp__victim__block", "arguments": {"fifo": str(fifo)}}
        )
        call = threading.Thread(target=_post_into, args=(found, served, body, headers))
        call.start()
        assert fifo.read_text() == "started\n"  # the call is in flight upstream
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 77},
        }
        with httpx.Client(timeout=30) as other:
            assert (
                other.post(served.url, content=json.dumps(cancel), headers=headers).status_code
                == 202
            )
        call.join(timeout=30)
        answers.append(_message(found[0]))
    assert answers[0] == answers[1]
    assert answers[0]["error"]["message"] == "Request cancelled"


async def _asked_over_http(served: Served) -> tuple[list[str], str, str]:
    asked: list[str] = []
    async with (
        httpx2.AsyncClient(headers=AUTH, timeout=30) as http,
        Client(
            streamable_http_client(served.url, http_client=http),
            mode="legacy",
            elicitation_callback=scripted_elicitation(["allow_once"], asked),
        ) as client,
    ):
        result = await client.call_tool("mcp__toolbox__add", {"a": 2, "b": 3})
        echoed = await client.call_tool("mcp__toolbox__echo", {"text": "plain"})
    return asked, text_of(result), text_of(echoed)


@pytest.mark.anyio
async def test_an_eliciting_handshake_era_client_is_asked_on_the_sdk_route(pair: Pair) -> None:
    found = [await _asked_over_http(served) for served in pair.both()]
    assert found[0] == found[1]
    asked, result, echoed = found[0]
    assert len(asked) == 1
    assert "mcp__toolbox__add" in asked[0]
    assert (result, echoed) == ("5", "plain")


def _long_call(served: Served, fifo: Path, found: dict[str, Any]) -> None:
    """A call to ``block`` read as a stream: its content type and first chunk once it is
    past the keep-alive time, then (after a cancel) the final message."""
    headers = served.open_session()
    body = _request(
        88, "tools/call", {"name": "mcp__victim__block", "arguments": {"fifo": str(fifo)}}
    )
    with served.http.stream(
        "POST", served.url, content=json.dumps(body), headers=headers
    ) as answer:
        found["type"] = answer.headers["content-type"]
        chunks = answer.iter_text()
        found["first"] = next(chunks)  # sent after KEEPALIVE_S, while the call still runs
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 88},
        }
        with httpx.Client(timeout=30) as other:
            other.post(served.url, content=json.dumps(cancel), headers=headers)
        found["rest"] = "".join(chunks)


def test_a_fast_call_past_the_keepalive_time_is_streamed_with_keepalive_comments(
    pair: Pair, tmp_path: Path
) -> None:
    found: list[dict[str, Any]] = [{}, {}]
    threads = []
    for index, served in enumerate(pair.both()):
        fifo = tmp_path / f"long-{index}"
        os.mkfifo(fifo)
        thread = threading.Thread(target=_long_call, args=(served, fifo, found[index]))
        thread.start()
        assert fifo.read_text() == "started\n"
        threads.append(thread)
    started = time.monotonic()
    for thread in threads:
        thread.join(timeout=60)
    assert time.monotonic() - started >= KEEPALIVE_S - 1
    for one in found:
        assert one["type"].startswith("text/event-stream"), one
        assert one["first"].startswith(": ping"), one
    fast, sdk = (json.loads(one["rest"].split("data: ")[-1]) for one in found)
    assert fast == sdk
    assert fast["error"]["message"] == "Request cancelled"


def _closed_mid_call(served: Served, fifo: Path) -> None:
    """A 2026-07-28 call to ``block`` on a raw connection, closed once the call is upstream."""
    body, headers = _modern_call(served, "mcp__victim__block", {"fifo": str(fifo)})
    content = json.dumps(body).encode()
    url = httpx.URL(served.url)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    request = (
        f"POST {url.path} HTTP/1.1\r\nhost: {url.host}:{url.port}\r\n{head}"
        f"content-length: {len(content)}\r\n\r\n"
    ).encode() + content
    with socket.create_connection((url.host, url.port), timeout=30) as connection:
        connection.sendall(request)
        assert fifo.read_text() == "started\n"  # the call is in flight upstream


def test_a_modern_client_closing_the_connection_cancels_its_fast_call(
    pair: Pair, tmp_path: Path
) -> None:
    records = []
    for index, served in enumerate(pair.both()):
        start = time.time()
        fifo = tmp_path / f"closed-{index}"
        os.mkfifo(fifo)
        _closed_mid_call(served, fifo)
        found = served.audit_since(start, "mcp__victim__block")
        assert len(found) == 1, found
        records.append((found[0]["outcome"], found[0]["error_class"]))
    assert records[0] == records[1] == ("error", "CancelledError")

"""Attack: a request whose ``id`` is no string or integer (``1.5``, ``null``, ``true``), which
the SDK's message union reads as a notification, so it was never answered and a client waits.

Held: every such request is answered with -32600 (a numeric id echoed, so the client can
match it; any other id as null), and the connection keeps serving.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.streams.text import TextReceiveStream

from pegboard.mcp.framing import parse_line, rejection
from tests.gateway.harness import PEGBOARD, STARTUP_BOUND, gateway_env, write_config

pytestmark = pytest.mark.anyio

INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "0"},
}
ERROR = {"code": -32600, "message": "Invalid request: id: must be a string or an integer"}
ODD_IDS: list[tuple[str, Any]] = [
    ("1.5", 1.5),
    ("-0.5", -0.5),
    ("2.0", 2.0),
    ("1e3", 1000.0),
    ("null", None),
    ("true", None),
    ("[1]", None),
    ('{"a": 1}', None),
]


@pytest.mark.parametrize(("raw", "echoed"), ODD_IDS)
def test_a_request_with_an_odd_id_is_refused_not_taken_for_a_notification(
    raw: str, echoed: Any
) -> None:
    line = f'{{"jsonrpc": "2.0", "id": {raw}, "method": "tools/list"}}'.encode()
    parsed = parse_line(line)

    assert isinstance(parsed, ValueError)
    answer = rejection(line, str(parsed))
    assert answer is not None
    assert json.loads(answer) == {"jsonrpc": "2.0", "id": echoed, "error": ERROR}


def test_a_real_notification_is_still_one() -> None:
    parsed = parse_line(b'{"jsonrpc": "2.0", "method": "notifications/x", "params": {"id": 1}}')
    assert not isinstance(parsed, Exception)


async def test_the_gateway_answers_each_odd_id_and_keeps_serving(tmp_path: Path) -> None:
    write_config(tmp_path, {})
    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(
            [PEGBOARD, "serve"], env=gateway_env(tmp_path)
        ) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}]
            await process.stdin.send(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
            for raw, _ in ODD_IDS:
                line = f'{{"jsonrpc": "2.0", "id": {raw}, "method": "ping"}}\n'
                await process.stdin.send(line.encode())
            await process.stdin.send(b'{"jsonrpc": "2.0", "id": 9, "method": "ping"}\n')
            buffered, answers = b"", []
            while len(answers) < len(ODD_IDS) + 2:
                while b"\n" not in buffered:
                    buffered += await process.stdout.receive()
                line, buffered = buffered.split(b"\n", 1)
                answers.append(json.loads(line))
            await process.stdin.aclose()

    def key(answer: dict[str, Any]) -> str:
        return json.dumps(answer, sort_keys=True)

    refused = [a for a in answers if "error" in a]
    served = {a["id"] for a in answers if "result" in a}
    expected = [{"jsonrpc": "2.0", "id": echoed, "error": ERROR} for _, echoed in ODD_IDS]
    assert sorted(refused, key=key) == sorted(expected, key=key)
    assert served == {0, 9}  # initialize and the ping after the odd ones


async def test_the_http_gateway_answers_an_odd_id_instead_of_accepting_it(tmp_path: Path) -> None:
    write_config(tmp_path, {})
    args = [PEGBOARD, "serve", "--http", "--port", "0", "--no-defer"]
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}
    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(args, env=gateway_env(tmp_path)) as process:
            assert process.stderr is not None
            buffered = ""
            async for chunk in TextReceiveStream(process.stderr):
                buffered += chunk
                if "pegboard serving MCP on " in buffered:
                    break
            url = buffered.split("pegboard serving MCP on ", 1)[1].split()[0]
            async with httpx2.AsyncClient() as http:
                init = await http.post(url, json=initialize, headers=headers)
                session = {"Mcp-Session-Id": init.headers["mcp-session-id"]}
                odd = {}
                for raw, _ in ODD_IDS[:4]:
                    body = f'{{"jsonrpc": "2.0", "id": {raw}, "method": "ping"}}'
                    answer = await http.post(url, content=body, headers=headers | session)
                    odd[raw] = (answer.status_code, answer.json())
                note = {"jsonrpc": "2.0", "method": "notifications/x", "params": {"id": 1.5}}
                accepted = await http.post(url, json=note, headers=headers | session)
            process.terminate()

    for raw, echoed in ODD_IDS[:4]:
        assert odd[raw] == (400, {"jsonrpc": "2.0", "id": echoed, "error": ERROR})
    assert accepted.status_code == 202  # a real notification (an "id" in params) still is one

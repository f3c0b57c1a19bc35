"""Attack: DNS rebinding against ``pegboard serve --http`` bound to loopback without a token.

A browser page on a rebound name sends ``Host: evil.example`` / ``Origin: http://evil.example``.
Every bind without a token must refuse that, whatever the spelling of the loopback address;
spellings pegboard does not treat as loopback must need a token instead of serving open.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.streams.text import TextReceiveStream

from tests.cli.conftest import Invoke
from tests.gateway.harness import PEGBOARD, STARTUP_BOUND, gateway_env, write_config

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _foreign(port: str) -> dict[str, dict[str, str]]:
    return {
        "foreign host": {"Host": f"evil.example:{port}"},
        "foreign origin": {"Origin": "http://evil.example"},
        "both": {"Host": f"evil.example:{port}", "Origin": "http://evil.example"},
        "own host": {},
    }


def _smuggled(port: str) -> dict[str, dict[str, str]]:
    """Headers that start like an allowed host (the SDK's ``127.0.0.1:*`` is a prefix)."""
    return {
        "host userinfo": {"Host": f"127.0.0.1:{port}@evil.com"},
        "localhost userinfo": {"Host": f"localhost:{port}@evil.com"},
        "host suffix": {"Host": f"127.0.0.1:{port}.evil.com"},
        "host path": {"Host": f"127.0.0.1:{port}/evil"},
        "host space": {"Host": f"127.0.0.1:{port} evil.com"},
        "origin userinfo": {"Origin": f"http://127.0.0.1:{port}@evil.com"},
        "origin suffix": {"Origin": f"http://localhost:{port}.evil.com"},
        "origin path": {"Origin": f"http://127.0.0.1:{port}/x@evil.com"},
        "own host": {},
        "own origin": {"Origin": f"http://127.0.0.1:{port}"},
    }


async def _probe(
    tmp_path: Path, host: str, cases: Callable[[str], dict[str, dict[str, str]]] = _foreign
) -> dict[str, int]:
    write_config(tmp_path, {})
    args = [PEGBOARD, "serve", "--http", "--host", host, "--port", "0", "--no-defer"]
    codes: dict[str, int] = {}
    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(args, env=gateway_env(tmp_path)) as process:
            assert process.stderr is not None
            buffered = ""
            async for chunk in TextReceiveStream(process.stderr):
                buffered += chunk
                if "pegboard serving MCP on " in buffered:
                    break
            url = buffered.split("pegboard serving MCP on ", 1)[1].split()[0]
            port = url.rsplit(":", 1)[1].split("/")[0]
            async with httpx2.AsyncClient() as http:
                for label, extra in cases(port).items():
                    answer = await http.post(url, json=INIT, headers=HEADERS | extra)
                    codes[label] = answer.status_code
            process.terminate()
    return codes


@pytest.mark.parametrize("host", ["127.0.0.2", "127.1.2.3", "127.0.0.1"])
async def test_a_tokenless_loopback_bind_refuses_foreign_host_and_origin_in_any_spelling(
    tmp_path: Path, host: str
) -> None:
    codes = await _probe(tmp_path, host)

    assert codes["foreign host"] == 421
    assert codes["foreign origin"] == 403
    assert codes["both"] == 421
    assert codes["own host"] == 200


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2"])
async def test_a_host_or_origin_that_only_starts_like_loopback_is_refused(
    tmp_path: Path, host: str
) -> None:
    codes = await _probe(tmp_path, host, _smuggled)

    assert codes.pop("own host") == 200
    assert codes.pop("own origin") == 200
    assert codes == dict.fromkeys(codes, 421)


@pytest.mark.parametrize("host", ["127.1", "0x7f000001", "localhost.", "2130706433", "0.0.0.0"])
def test_odd_loopback_spellings_need_a_token_instead_of_serving_open(
    invoke: Invoke, host: str
) -> None:
    result = invoke("serve", "--http", "--host", host)

    assert result.exit_code == 2
    assert f"--host {host} is not a loopback address: set a bearer token" in result.stderr

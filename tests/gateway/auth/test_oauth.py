"""``pegboard serve --http`` as an OAuth 2.1 resource server, against a real OpenID provider.

The provider (npm ``oidc-provider``) issues JWT access tokens by the client_credentials grant;
the gateway discovers it, fetches its JWKS and checks every request. Hostile tokens are signed
by the test with the provider's own key (or another one) so that each check is tried alone.
"""

from __future__ import annotations

import base64
import json
import select
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.auth.idp import Idp, free_port, require_provider, running_idp
from tests.gateway.harness import (
    PEGBOARD,
    STARTUP_BOUND,
    Notifications,
    gateway_env,
    sdk_server,
    text_of,
    wait_for_tools,
    write_config,
)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@dataclass
class Served:
    url: str
    idp: Idp
    process: subprocess.Popen[str]
    stderr: list[str]

    def post(self, token: str | None) -> httpx2.Response:
        headers = dict(ACCEPT)
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        return httpx2.post(self.url, json=INITIALIZE, headers=headers, timeout=15)


def start_gateway(
    tmp_path: Path,
    config: dict[str, object],
    port: int,
    options: tuple[str, ...] = ("--no-defer", "--log-level", "debug"),
) -> tuple[subprocess.Popen[str], str, list[str]]:
    write_config(tmp_path, config)
    process = subprocess.Popen(
        [PEGBOARD, "serve", "--http", "--port", str(port), *options],
        env=gateway_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    assert process.stderr is not None
    deadline = time.monotonic() + STARTUP_BOUND
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stderr], [], [], 1)
        if not ready:
            continue
        line = process.stderr.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("pegboard serving MCP on "):
            return process, line.removeprefix("pegboard serving MCP on ").strip(), lines
    process.kill()
    raise AssertionError(f"pegboard serve did not start: {''.join(lines)}")


def auth_config(idp_issuer: str, audience: str) -> dict[str, object]:
    return {
        "servers": {"toolbox": sdk_server() | {"force_prompt_tools": ["echo"]}},
        "auth": {"issuer": idp_issuer, "audience": audience},
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    require_provider()
    tmp_path = tmp_path_factory.mktemp("oauth")
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    with running_idp(audience) as idp:
        process, url, lines = start_gateway(tmp_path, auth_config(idp.issuer, audience), port)
        try:
            yield Served(url, idp, process, lines)
        finally:
            process.terminate()
            process.wait(timeout=15)


pytestmark = pytest.mark.anyio


async def test_a_token_from_the_issuer_lists_and_calls_tools(served: Served) -> None:
    token = served.idp.token("alice")
    changes = Notifications()
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}) as http,
        Client(
            streamable_http_client(served.url, http_client=http),
            mode="legacy",  # the handshake era, whose list changes come as notifications
            message_handler=changes,
        ) as client,
    ):
        with anyio.fail_after(STARTUP_BOUND):
            await wait_for_tools(client, changes, "mcp__toolbox__add")
        result = await client.call_tool("mcp__toolbox__add", {"a": 20, "b": 22})
    assert text_of(result) == "42"


def test_no_token_gets_401_pointing_at_the_protected_resource_metadata(served: Served) -> None:
    refused = served.post(None)
    assert refused.status_code == 401
    metadata_url = served.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    challenge = refused.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{metadata_url}"' in challenge
    for address in (
        metadata_url,
        served.url.replace("/mcp", "/.well-known/oauth-protected-resource"),
    ):
        metadata = httpx2.get(address, timeout=10).json()
        assert metadata["resource"] == served.url
        assert metadata["authorization_servers"] == [served.idp.issuer]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(claims: dict[str, object], header: dict[str, object]) -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}."


def _hostile(served: Served, kind: str) -> str:
    idp = served.idp
    now = int(time.time())
    if kind == "forged signature":
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return idp.sign({"sub": "alice"}, key=other)
    if kind == "alg none":
        claims = {"iss": idp.issuer, "aud": idp.audience, "sub": "alice", "exp": now + 300}
        return _unsigned(claims, {"alg": "none", "kid": "test-key-1", "typ": "JWT"})
    if kind == "HS256 keyed with the public key":
        public = idp.private_key.public_key()
        pem = public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        claims = {"iss": idp.issuer, "aud": idp.audience, "sub": "alice", "exp": now + 300}
        header = _b64(json.dumps({"alg": "HS256", "kid": "test-key-1", "typ": "JWT"}).encode())
        body = _b64(json.dumps(claims).encode())
        import hashlib
        import hmac

        mac = hmac.new(pem, f"{header}.{body}".encode(), hashlib.sha256).digest()
        return f"{header}.{body}.{_b64(mac)}"
    if kind == "wrong audience (issued by the provider)":
        return idp.token("alice", audience="http://127.0.0.1:1/other")
    if kind == "wrong issuer":
        return idp.sign({"iss": "http://127.0.0.1:2/evil"})
    if kind == "expired":
        return idp.sign({"exp": now - 120, "iat": now - 720})
    if kind == "not yet valid":
        return idp.sign({"nbf": now + 600})
    if kind == "no subject":
        return idp.sign({"sub": None})
    if kind == "no expiry":
        return idp.sign({"exp": None})
    if kind == "unknown kid":
        return idp.sign({}, kid="no-such-key")
    if kind == "oversized":
        return idp.sign({"padding": "x" * 9000})
    if kind == "garbage":
        return "not.a.jwt"
    raise AssertionError(kind)


HOSTILE = [
    "forged signature",
    "alg none",
    "HS256 keyed with the public key",
    "wrong audience (issued by the provider)",
    "wrong issuer",
    "expired",
    "not yet valid",
    "no subject",
    "no expiry",
    "unknown kid",
    "oversized",
    "garbage",
]


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_token_is_refused(served: Served, kind: str) -> None:
    token = _hostile(served, kind)
    refused = served.post(token)
    assert refused.status_code == 401, (kind, refused.text)
    assert "resource_metadata=" in refused.headers["www-authenticate"]
    assert token not in refused.text


def test_a_token_signed_right_with_the_right_claims_is_accepted(served: Served) -> None:
    # The control for the hostile cases: the same construction without the defect passes.
    assert served.post(served.idp.sign({"sub": "alice"})).status_code == 200


def test_tokens_never_reach_the_gateway_log(served: Served) -> None:
    tokens = [served.idp.token("bob"), _hostile(served, "expired"), _hostile(served, "unknown kid")]
    for token in tokens:
        served.post(token)
    served.post(tokens[0])
    log = "".join(served.stderr) + _drain(served.process)
    for token in tokens:
        assert token not in log
        assert token.split(".")[2] not in log


def _drain(process: subprocess.Popen[str]) -> str:
    assert process.stderr is not None
    out = []
    while select.select([process.stderr], [], [], 0.2)[0]:
        line = process.stderr.readline()
        if not line:
            break
        out.append(line)
    return "".join(out)


def test_cached_keys_keep_working_when_the_issuer_goes_down(tmp_path: Path) -> None:
    require_provider()
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    with running_idp(audience) as idp:
        process, url, _ = start_gateway(tmp_path, auth_config(idp.issuer, audience), port)
        try:
            token = idp.token("alice")
            idp.stop()
            served = Served(url, idp, process, [])
            assert served.post(token).status_code == 200
            # An unknown kid makes the gateway try the (dead) issuer once: refused, no hang.
            started = time.monotonic()
            assert served.post(idp.sign({}, kid="rotated-key")).status_code == 401
            assert time.monotonic() - started < 12
            assert served.post(token).status_code == 200
        finally:
            process.terminate()
            process.wait(timeout=15)


def test_an_unreachable_issuer_at_start_is_a_one_line_error(tmp_path: Path) -> None:
    port, dead = free_port(), free_port()
    write_config(
        tmp_path,
        auth_config(f"http://127.0.0.1:{dead}/realm", f"http://127.0.0.1:{port}/mcp"),
    )
    result = subprocess.run(
        [PEGBOARD, "serve", "--http", "--port", str(port)],
        env=gateway_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert errors == [
        f"error: [auth] issuer http://127.0.0.1:{dead}/realm: cannot read its metadata or keys "
        "(connection refused or unreachable); check the URL and that the issuer is reachable"
    ], result.stderr
    assert "Traceback" not in result.stderr


def test_the_static_token_and_auth_together_are_refused(tmp_path: Path) -> None:
    config = auth_config("http://127.0.0.1:9/x", "http://127.0.0.1:9/mcp")
    config["gateway"] = {"token": "s3cret"}
    write_config(tmp_path, config)
    result = subprocess.run(
        [PEGBOARD, "serve", "--http", "--port", "0"],
        env=gateway_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert "use the token for one user or [auth] for a team, not both" in result.stderr
    assert "s3cret" not in result.stderr


def _modern_call(served: Served, token: str, params: dict[str, object]) -> dict[str, object]:
    """One 2026-07-28 ``tools/call`` POST (no session) with ``token``."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params | {"_meta": meta}}
    headers = ACCEPT | {
        "authorization": f"Bearer {token}",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": str(params["name"]),
    }
    answer: dict[str, object] = httpx2.post(
        served.url, json=body, headers=headers, timeout=30
    ).json()
    return answer


def test_an_approval_round_of_one_oauth_identity_is_refused_to_another(served: Served) -> None:
    alice, bob = served.idp.token("alice"), served.idp.token("bob")
    call: dict[str, object] = {"name": "mcp__toolbox__echo", "arguments": {"text": "hi"}}
    deadline = time.monotonic() + STARTUP_BOUND
    while True:  # the tool is known once the upstream warmed (or its list came from cache)
        first = _modern_call(served, alice, call)
        result = first.get("result")
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            break
        assert time.monotonic() < deadline, first
        time.sleep(0.5)
    yes = {"pegboard.approval": {"action": "accept", "content": {"decision": "allow_once"}}}
    retry = call | {"inputResponses": yes, "requestState": result["requestState"]}

    stolen = _modern_call(served, bob, retry)
    ran = _modern_call(served, alice, retry)

    assert stolen["error"] == {
        "code": -32602,
        "message": "Invalid or expired requestState",
        "data": {"reason": "invalid_request_state"},
    }
    assert ran["result"]["content"] == [{"type": "text", "text": "hi"}]  # type: ignore[index]

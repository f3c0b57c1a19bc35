"""The client's bearer token never reaches an upstream MCP server (no confused deputy).

A real upstream (the SDK's server over streamable HTTP on 127.0.0.1) records the headers of
every request it gets; the gateway is given one header of its own for it. A client calls the
upstream's tool through ``pegboard serve --http`` with its token: an access token from the real
OpenID provider, or the static ``[gateway] token``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.auth.idp import free_port, running_idp
from tests.gateway.auth.test_oauth import start_gateway
from tests.gateway.harness import (
    GATEWAY_SERVERS,
    STARTUP_BOUND,
    Notifications,
    text_of,
    wait_for_tools,
)

UPSTREAM_KEY = "upstream-key-7f3a"
STATIC_TOKEN = "static-client-token-91c2"


@contextmanager
def recording_upstream(log: Path) -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, str(GATEWAY_SERVERS / "headers.py"), str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # bounded by pytest-timeout; printed first
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{line.split()[1]}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def client_token(kind: str, audience: str, config: dict[str, object]) -> Iterator[str]:
    """The client's token, with ``config`` set up to accept it."""
    if kind == "static gateway token":
        config["gateway"] = {"token": STATIC_TOKEN}
        yield STATIC_TOKEN
        return
    with running_idp(audience) as idp:
        config["auth"] = {"issuer": idp.issuer, "audience": audience}
        yield idp.token("alice")


async def call_ping(url: str, token: str) -> str:
    changes = Notifications()
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}) as http,
        Client(
            streamable_http_client(url, http_client=http), mode="legacy", message_handler=changes
        ) as client,
    ):
        with anyio.fail_after(STARTUP_BOUND):
            await wait_for_tools(client, changes, "mcp__upstream__ping")
        return text_of(await client.call_tool("mcp__upstream__ping", {}))


@pytest.mark.parametrize("kind", ["oauth access token", "static gateway token"])
def test_the_clients_token_is_never_sent_upstream_but_configured_headers_are(
    tmp_path: Path, kind: str
) -> None:
    log = tmp_path / "upstream-headers.jsonl"
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    with recording_upstream(log) as upstream_url:
        upstream = {"url": upstream_url, "headers": {"X-Upstream-Key": UPSTREAM_KEY}}
        config: dict[str, object] = {"servers": {"upstream": upstream}}
        with client_token(kind, audience, config) as token:
            process, url, _ = start_gateway(tmp_path, config, port)
            try:
                # A synchronous test around one event loop for the client: the upstream's,
                # the provider's and the gateway's starts block on pipes, off any loop.
                assert anyio.run(call_ping, url, token) == "pong"
            finally:
                process.terminate()
                process.wait(timeout=15)
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(requests) >= 3  # initialize, initialized, tools/list, tools/call at least
    for pairs in requests:
        headers = {name.lower(): value for name, value in pairs}
        assert headers.get("x-upstream-key") == UPSTREAM_KEY, headers
        leaked = [name for name, value in pairs if token in value or token[-16:] in value]
        assert not leaked, f"the client's token reached the upstream in {leaked}"
        assert "authorization" not in headers, headers["authorization"]

"""Per-call cost of identity, access rules and rate limits on ``pegboard serve --http``.

    .venv/bin/python bench/access.py [--calls 300] [--rules 20]

Needs node and the npm ``oidc-provider`` (``scripts/install_refservers.sh``): a real OpenID
provider on loopback issues the access token. Upstream: ``tests/mcp/servers/sdk_server.py``
(tool ``echo``). Sequential ``tools/call echo`` over streamable HTTP (handshake era), calls
interleaved one by one so that load on a shared machine hits every path alike:

  * token: ``serve --http`` with the static ``[gateway] token``, no rules, no limits;
  * oauth + rules + limits: ``[auth]`` (every request's JWT checked against the provider's
    JWKS), ``--rules`` ``[[auth.allow]]`` rules (the caller matched by the last, through a
    group) and ``[limits]`` (high enough never to refuse);

and in-process, without a transport: ``RegistrySurface.call_tool`` with no access view vs
with the caller's view (the filtered listing and the check on each call). Reports p50/p95 per
call (ms) and the p50 ratio to the first path of each pair, in the same run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import tomli_w
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.gateway.auth.idp import free_port, running_idp  # noqa: E402

from pegboard.config import load_config  # noqa: E402
from pegboard.core.principal import Principal  # noqa: E402
from pegboard.runtime import RuntimeOptions, ToolRuntime  # noqa: E402

SDK_SERVER = ROOT / "tests" / "mcp" / "servers" / "sdk_server.py"
PEGBOARD = str(Path(sys.executable).parent / "pegboard")
ECHO = {"text": "hello"}
TOOL = "mcp__up__echo"
TOKEN = "bench-static-token-0123456789"


def _percentile(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct))]


async def _interleaved(
    calls: int, paths: dict[str, Callable[[], Awaitable[Any]]]
) -> dict[str, list[float]]:
    for _ in range(20):  # warm-up
        for call in paths.values():
            await call()
    times: dict[str, list[float]] = {label: [] for label in paths}
    for _ in range(calls):
        for label, call in paths.items():
            started = time.perf_counter()
            await call()
            times[label].append((time.perf_counter() - started) * 1000)
    return times


def _config(tmp: Path, extra: dict[str, Any]) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "config.toml"
    upstream = {"command": sys.executable, "args": [str(SDK_SERVER), "stdio"]}
    path.write_text(tomli_w.dumps({"servers": {"up": upstream}, "meta": {"defer": False}} | extra))
    return path


def _rules(count: int) -> list[dict[str, Any]]:
    """``count`` rules; only the last names the caller (by its group ``ops``)."""
    rules: list[dict[str, Any]] = [
        {"subjects": [f"user{i}", f"group:team{i}"], "servers": ["up"], "tools": ["add"]}
        for i in range(count - 1)
    ]
    return [*rules, {"subjects": ["group:ops"], "servers": ["up"], "tools": ["*"]}]


@asynccontextmanager
async def _serve(config: Path, port: int) -> AsyncIterator[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "PEGBOARD_CONFIG": str(config),
        "PEGBOARD_DATA_DIR": str(config.parent / "data"),
    }
    args = [PEGBOARD, "serve", "--http", "--port", str(port), "--no-defer"]
    async with await anyio.open_process(args, env=env) as process:
        try:
            assert process.stderr is not None
            text = ""
            async for chunk in process.stderr:
                text += chunk.decode()
                if "pegboard serving MCP on " in text:
                    break
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            await process.wait()


async def _client(stack: AsyncExitStack, url: str, bearer: str) -> Client:
    http = await stack.enter_async_context(
        httpx2.AsyncClient(headers={"authorization": f"Bearer {bearer}"}, timeout=30)
    )
    client = await stack.enter_async_context(
        Client(streamable_http_client(url, http_client=http), mode="legacy")
    )
    with anyio.fail_after(60):
        while True:  # the upstream is listed once it answered
            if TOOL in {t.name for t in (await client.list_tools()).tools}:
                break
            await anyio.sleep(0.2)
    return client


async def over_http(tmp: Path, calls: int, rules: int) -> dict[str, list[float]]:
    token_port, auth_port = free_port(), free_port()
    audience = f"http://127.0.0.1:{auth_port}/mcp"
    with running_idp(audience) as idp:
        plain = _config(tmp / "token", {"gateway": {"token": TOKEN}})
        authed = _config(
            tmp / "auth",
            {
                "auth": {"issuer": idp.issuer, "audience": audience, "allow": _rules(rules)},
                "limits": {"calls_per_minute": 10**6},
            },
        )
        access_token = idp.token("alice")  # group ops
        async with (  # the clients close before the gateways stop
            _serve(plain, token_port) as plain_url,
            _serve(authed, auth_port) as auth_url,
            AsyncExitStack() as stack,
        ):
            by_token = await _client(stack, plain_url, TOKEN)
            by_oauth = await _client(stack, auth_url, access_token)
            return await _interleaved(
                calls,
                {
                    "token (no rules, no limits)": lambda: by_token.call_tool(TOOL, ECHO),
                    f"oauth + {rules} rules + limits": lambda: by_oauth.call_tool(TOOL, ECHO),
                },
            )


async def in_process(tmp: Path, calls: int, rules: int) -> dict[str, list[float]]:
    config = _config(tmp / "inproc", {"auth": {"allow": _rules(rules)}})
    runtime = ToolRuntime(load_config(config), RuntimeOptions(defer=False))
    listed = anyio.Event()
    runtime.surface.subscribe(listed.set)
    async with runtime.running():
        with anyio.fail_after(60):
            if not runtime.surface.list_tools():
                await listed.wait()
        view = runtime.access.of(Principal("alice", frozenset({"ops"})))
        assert view is not None

        def call(access: Any) -> Callable[[], Awaitable[Any]]:
            return lambda: runtime.surface.call_tool(
                TOOL, ECHO, call_id="bench", approval=None, access=access
            )

        return await _interleaved(
            calls,
            {
                "surface.call_tool, no view": call(None),
                f"with the view of {rules} rules": call(view),
            },
        )


def _table(title: str, times: dict[str, list[float]]) -> None:
    print(f"\n{title}\n")
    print("| path | p50 ms | p95 ms | p50 ratio |")
    print("|---|---:|---:|---:|")
    base = None
    for label, samples in times.items():
        p50 = _percentile(samples, 0.5)
        base = base or p50
        print(f"| {label} | {p50:.2f} | {_percentile(samples, 0.95):.2f} | x{p50 / base:.2f} |")


async def main(ns: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        http = await over_http(tmp, ns.calls, ns.rules)
        local = await in_process(tmp, ns.calls, ns.rules)
    _table(f"Sequential tools/call over streamable HTTP ({ns.calls} calls each)", http)
    _table("In-process RegistrySurface.call_tool (pegboard's own share)", local)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rules", type=int, default=20)
    anyio.run(main, parser.parse_args())

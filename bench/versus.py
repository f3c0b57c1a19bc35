"""pegboard's gateway beside FastMCP's proxy and the floors, in one run.

    .venv/bin/python bench/versus.py [--only latency,throughput,...] [--calls 300]

FastMCP runs from its own virtualenv (``--fastmcp-python``, default
``bench/.cache/fastmcp/bin/python``; make it with ``python3 -m venv bench/.cache/fastmcp &&
bench/.cache/fastmcp/bin/pip install fastmcp``): ``bench/fastmcp_proxy.py`` proxies the same
upstream. Upstream: the SDK test server ``tests/mcp/servers/sdk_server.py`` (tool ``echo``),
over stdio behind both proxies; its own streamable HTTP endpoint is the HTTP floor.

Sections (``--only`` picks some; the rows of a table alternate run by run so that load on a
shared machine hits all alike; ratios are against the floor of the same run):

* ``latency``: sequential ``tools/call echo`` on one kept-alive HTTP connection, p50/p95 per
  call for three clients: the Python SDK client (httpx2), ``httpx.Client`` speaking raw
  JSON-RPC, and Node's ``fetch`` (``bench/clients/fetch_calls.mjs``, what the TypeScript SDK
  uses; one process per server, its session opened and warmed up before the timed rounds).
  Added = proxy p50 - direct p50. Server CPU per call from /proc, read around the timed
  calls. The HTTP rows include pegboard with ``PEGBOARD_NO_FAST_CALLS=1`` (the SDK's route for
  every request, as before the HTTP fast path) beside pegboard as shipped.
* ``throughput``: calls/s with 1, 8, 32 and 64 concurrent sessions (``--clients``), each on
  its own kept-alive connection, raw JSON-RPC from this process; server CPU per call. Each row
  is ``--rounds`` windows, the servers taking turns window by window; the table gives the
  windows' spread beside the whole row's rate. A second table splits each call's wall time
  into the CPU of the clients (this process), of the proxy and of its upstream (the proxy's
  child processes), and the rest (no process of the chain running: wake-ups, the
  scheduler). Extra rows, beside the SDK-upstream ones: pegboard and FastMCP in front of
  ``tests/mcp/servers/scripted.py --names echo`` (stdlib only, near-zero cost per call), so
  the proxies' own cost is not hidden behind the SDK server's; their x is against FastMCP in
  front of that same upstream.
* ``cpu``: stdio, sequential calls: the upstream itself and a standard-library JSON-RPC relay
  (``bench/relay.py``) as floors, ``pegboard serve --no-defer``, FastMCP's stdio proxy; CPU
  per call of the proxy process alone.
* ``first-call``: spawn to the first answered ``tools/call`` (the catalog cache warm), beside
  a bare SDK server's ready time and the upstream's own first call.
* ``first-search``: pegboard deferred over a LiveMCPBench-like catalog (``bench/
  catalog_server.py``): the first ``tool_search`` sent ``--search-pauses`` seconds after the
  ``initialize`` answer, against the later ones (``--later-searches``, back to back; they
  repeat the first's query) and against the first's query sent once more after the same idle
  pause (on a shared machine any search after an idle pause costs more CPU: caches evicted);
  wall, the process's CPU and its loop thread's.
* ``cli``: the cache-read commands (``tools list``/``search``/``inspect``, ``servers
  status``/``list``) as whole processes beside ``python -c "import mcp.types"``: CPU, wall,
  peak RSS (``--starts`` runs each; ``bench/versus_cli.py``); with ``--cli-instructions``
  also each row's instructions under callgrind, which load does not move.
* ``memory``: RSS of each serving process after tools/list, a search (deferred rows) and a
  call, at 527 tools (LiveMCPBench) and ~5,000 (LiveMCPBench + SealTools + MetaTool pooled);
  each row read again 2 s later (``..., 2 s later``), the process idle by then.

Before any section, this checkout's ``src/`` and ``--before-src`` are byte-compiled
(``versus_stdio.compile_sources``): every pegboard row reads bytecode, as an installed one does.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import httpx2
import tomli_w
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import versus_cli  # bench/ is the script's directory
import versus_stdio

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SDK_SERVER = ROOT / "tests" / "mcp" / "servers" / "sdk_server.py"
SCRIPTED = ROOT / "tests" / "mcp" / "servers" / "scripted.py"
LITE = ", stdlib upstream (scripted.py)"
PEGBOARD = str(Path(sys.executable).parent / "pegboard")
FASTMCP_PROXY = HERE / "fastmcp_proxy.py"
FETCH_CALLS = HERE / "clients" / "fetch_calls.mjs"
ECHO = {"text": "hello"}
SDK_ROUTE = "pegboard, PEGBOARD_NO_FAST_CALLS=1 (every request through the SDK)"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds(pid: int) -> float:
    """CPU so far of a process's children (a proxy's upstream servers; Linux /proc)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):  # a process that ended meanwhile
            if stat.read_text().rsplit(")", 1)[1].split()[1] == str(pid):
                total += cpu_seconds(int(stat.parent.name))
    return total


def percentile(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct))]


@dataclass
class Target:
    """One HTTP endpoint under test and the name its echo tool has there."""

    label: str
    url: str
    tool: str
    pid: int


@dataclass
class Setup:
    tmp: Path
    fastmcp_python: str
    before_src: str | None = None

    def pegboard_env(self) -> dict[str, str]:
        return dict(os.environ) | {
            "PEGBOARD_CONFIG": str(self.tmp / "config.toml"),
            "PEGBOARD_DATA_DIR": str(self.tmp / "data"),
        }

    def write_configs(self) -> None:
        upstream = {"command": sys.executable, "args": [str(SDK_SERVER), "stdio"]}
        config = {"data_dir": str(self.tmp / "data"), "servers": {"up": upstream}}
        (self.tmp / "config.toml").write_text(tomli_w.dumps(config))
        before = {"data_dir": str(self.tmp / "data-before"), "servers": {"up": upstream}}
        (self.tmp / "config-before.toml").write_text(tomli_w.dumps(before))
        (self.tmp / "fastmcp.json").write_text(json.dumps({"mcpServers": {"up": upstream}}))
        # The extra measure: an upstream of near-zero cost per call (stdlib, a few dict reads).
        lite = {"command": sys.executable, "args": [str(SCRIPTED), "--names", "echo"]}
        config = {"data_dir": str(self.tmp / "data-lite"), "servers": {"lite": lite}}
        (self.tmp / "config-lite.toml").write_text(tomli_w.dumps(config))
        (self.tmp / "fastmcp-lite.json").write_text(json.dumps({"mcpServers": {"lite": lite}}))


async def _first_line(process: Process, marker: str, from_stderr: bool) -> str:
    stream = process.stderr if from_stderr else process.stdout
    assert stream is not None
    text = ""
    with anyio.fail_after(60):
        async for chunk in TextReceiveStream(stream):
            text += chunk
            for line in text.splitlines():
                if line.startswith(marker):
                    return line.removeprefix(marker).split()[0]
    raise RuntimeError(f"no {marker!r} line; output: {text}")


@asynccontextmanager
async def http_server(
    args: list[str], marker: str, env: dict[str, str] | None, from_stderr: bool
) -> AsyncIterator[tuple[str, int]]:
    """Spawn an HTTP MCP server; yield its /mcp URL and pid."""
    async with await anyio.open_process(args, env=env) as process:
        try:
            found = await _first_line(process, marker, from_stderr)
            url = found if found.startswith("http") else f"http://127.0.0.1:{found}/mcp"
            yield url, process.pid
        finally:
            process.terminate()
            with anyio.move_on_after(10):
                await process.wait()


@asynccontextmanager
async def http_targets(setup: Setup, lite: bool = False) -> AsyncIterator[list[Target]]:
    """The floor (the upstream's own HTTP endpoint), pegboard serve --http, FastMCP's proxy;
    with ``lite``, pegboard and FastMCP again in front of the stdlib upstream (:data:`LITE`)."""
    async with AsyncExitStack() as stack:
        direct, direct_pid = await stack.enter_async_context(
            http_server([sys.executable, str(SDK_SERVER), "http"], "PORT ", None, False)
        )
        gateway_args = [PEGBOARD, "serve", "--http", "--port", "0", "--no-defer"]
        gateway, gateway_pid = await stack.enter_async_context(
            http_server(gateway_args, "pegboard serving MCP on ", setup.pegboard_env(), True)
        )
        sdk_route, sdk_route_pid = await stack.enter_async_context(
            http_server(
                gateway_args,
                "pegboard serving MCP on ",
                setup.pegboard_env()
                | {"PEGBOARD_NO_FAST_CALLS": "1", "PEGBOARD_DATA_DIR": str(setup.tmp / "data-sdk")},
                True,
            )
        )
        before: list[Target] = []
        if setup.before_src:
            env = setup.pegboard_env() | {
                "PYTHONPATH": setup.before_src,
                "PEGBOARD_CONFIG": str(setup.tmp / "config-before.toml"),
                "PEGBOARD_DATA_DIR": str(setup.tmp / "data-before"),
            }
            old, old_pid = await stack.enter_async_context(
                http_server(gateway_args, "pegboard serving MCP on ", env, True)
            )
            before = [Target("pegboard, code before (--before-src)", old, "mcp__up__echo", old_pid)]
        fastmcp_args = [setup.fastmcp_python, str(FASTMCP_PROXY), "http"]
        fastmcp, fastmcp_pid = await stack.enter_async_context(
            http_server([*fastmcp_args, str(setup.tmp / "fastmcp.json")], "PORT ", None, False)
        )
        lites: list[Target] = []
        if lite:
            env = setup.pegboard_env() | {
                "PEGBOARD_CONFIG": str(setup.tmp / "config-lite.toml"),
                "PEGBOARD_DATA_DIR": str(setup.tmp / "data-lite"),
            }
            url, pid = await stack.enter_async_context(
                http_server(gateway_args, "pegboard serving MCP on ", env, True)
            )
            lites.append(Target("pegboard serve --http" + LITE, url, "mcp__lite__echo", pid))
            lite_args = [*fastmcp_args, str(setup.tmp / "fastmcp-lite.json")]
            url, pid = await stack.enter_async_context(http_server(lite_args, "PORT ", None, False))
            lites.append(Target("FastMCP proxy" + LITE, url, "echo", pid))
        yield [
            Target("direct (upstream's own HTTP, floor)", direct, "echo", direct_pid),
            Target("pegboard serve --http", gateway, "mcp__up__echo", gateway_pid),
            Target(SDK_ROUTE, sdk_route, "mcp__up__echo", sdk_route_pid),
            *before,
            Target("FastMCP proxy", fastmcp, "echo", fastmcp_pid),
            *lites,
        ]


class RawSession:
    """An MCP session over one kept-alive ``httpx.Client`` connection, raw JSON-RPC."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=60)
        self.headers = dict(ACCEPT)
        self.next_id = 1

    def rpc(self, method: str, params: dict[str, Any], notification: bool = False) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notification:
            message["id"] = self.next_id
            self.next_id += 1
        answer = self.http.post(self.url, headers=self.headers, content=json.dumps(message))
        answer.raise_for_status()
        if "mcp-session-id" in answer.headers:
            self.headers["mcp-session-id"] = answer.headers["mcp-session-id"]
            self.headers["mcp-protocol-version"] = INIT["protocolVersion"]
        if notification:
            return None
        text = answer.text
        if not text.startswith("{"):
            text = next(ln[6:] for ln in text.splitlines() if ln.startswith("data: "))
        return json.loads(text)["result"]

    def open(self, tool: str) -> None:
        self.rpc("initialize", INIT)
        self.rpc("notifications/initialized", {}, notification=True)
        deadline = time.monotonic() + 60
        while tool not in [t["name"] for t in self.rpc("tools/list", {})["tools"]]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{tool} never listed at {self.url}")
            time.sleep(0.1)

    def calls(self, tool: str, count: int) -> list[float]:
        times = []
        for _ in range(count):
            started = time.perf_counter()
            result = self.rpc("tools/call", {"name": tool, "arguments": ECHO})
            times.append((time.perf_counter() - started) * 1000)
            assert not result.get("isError"), result
        return times


async def wait_listed(client: Client, tool: str) -> None:
    """Poll tools/list (the proxies list their upstream lazily) for up to 60 s."""
    for _ in range(600):
        if tool in [t.name for t in (await client.list_tools()).tools]:
            return
        await anyio.sleep(0.1)
    raise RuntimeError(f"{tool} never listed")


async def _sdk_client(stack: AsyncExitStack, url: str) -> Client:
    """An SDK client session on ``url``, retried: a loaded machine can cut a first handshake."""
    for attempt in range(3):
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=120))
        try:
            return await stack.enter_async_context(
                Client(streamable_http_client(url, http_client=http), mode="legacy")
            )
        except Exception as exc:
            print(f"SDK client handshake with {url} failed ({exc}); retrying", file=sys.stderr)
            if attempt == 2:
                raise
            await anyio.sleep(1)
    raise AssertionError("unreachable")


async def sdk_calls(client: Client, tool: str, count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        result = await client.call_tool(tool, ECHO)
        times.append((time.perf_counter() - started) * 1000)
        assert not result.is_error, result
    return times


class NodeClient:
    """One ``node bench/clients/fetch_calls.mjs`` process: its session opened and warmed up
    once, then ``calls(n)`` asks it for n timed calls (so the server CPU read around them
    holds no handshake)."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self.buffered = ""

    @classmethod
    async def start(cls, stack: AsyncExitStack, target: Target) -> NodeClient:
        args = ["node", str(FETCH_CALLS), target.url, target.tool]
        client = cls(await stack.enter_async_context(await anyio.open_process(args)))
        if await client.line() != "ready":
            raise RuntimeError(f"Node fetch client on {target.url} did not start")
        return client

    async def line(self) -> str:
        assert self.process.stdout is not None
        with anyio.fail_after(120):
            while "\n" not in self.buffered:
                self.buffered += (await self.process.stdout.receive()).decode()
        line, self.buffered = self.buffered.split("\n", 1)
        return line

    async def calls(self, count: int) -> list[float]:
        assert self.process.stdin is not None
        await self.process.stdin.send(f"{count}\n".encode())
        times: list[float] = json.loads(await self.line())
        return times


@dataclass
class Timed:
    """Per-call wall times (ms) and the server process's CPU per call (ms)."""

    times: list[float]
    cpu_s: float = 0.0

    @property
    def cpu_ms(self) -> float:
        return self.cpu_s * 1000 / max(1, len(self.times))


async def latency(setup: Setup, calls: int, rounds: int) -> dict[str, dict[str, Timed]]:
    """client -> target label -> per-call times, rounds alternating target by target."""
    per_round = max(1, calls // rounds)
    found: dict[str, dict[str, Timed]] = {}
    async with http_targets(setup) as targets, AsyncExitStack() as stack:
        sdk: dict[str, Client] = {}
        raw: dict[str, RawSession] = {}
        node: dict[str, NodeClient] = {}
        for target in targets:
            client = await _sdk_client(stack, target.url)
            await wait_listed(client, target.tool)
            sdk[target.label] = client
            raw[target.label] = RawSession(target.url)
            stack.callback(raw[target.label].http.close)
            await anyio.to_thread.run_sync(raw[target.label].open, target.tool)
            node[target.label] = await NodeClient.start(stack, target)
        runners: dict[str, Callable[[Target, int], Any]] = {
            "Python SDK client (httpx2)": lambda t, n: sdk_calls(sdk[t.label], t.tool, n),
            "httpx.Client, raw JSON-RPC": lambda t, n: anyio.to_thread.run_sync(
                raw[t.label].calls, t.tool, n
            ),
            "Node fetch": lambda t, n: node[t.label].calls(n),
        }
        for client_label, run in runners.items():
            rows = found[client_label] = {t.label: Timed([]) for t in targets}
            for target in targets:  # warm-up
                await run(target, 20)
            for turn in range(rounds):
                for target in targets if turn % 2 == 0 else targets[::-1]:
                    cpu_before = cpu_seconds(target.pid)
                    rows[target.label].times += await run(target, per_round)
                    rows[target.label].cpu_s += cpu_seconds(target.pid) - cpu_before
    return found


def print_latency(found: dict[str, dict[str, Timed]]) -> None:
    print("\nHTTP latency, sequential tools/call echo on one kept-alive connection (ms)\n")
    print(
        "| client | server | min | p50 | p95 | added p50 (over floor) | x of floor p50 "
        "| server CPU per call |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for client_label, rows in found.items():
        floor = statistics.median(next(iter(rows.values())).times)
        for target_label, row in rows.items():
            p50 = statistics.median(row.times)
            print(
                f"| {client_label} | {target_label} | {min(row.times):.2f} | {p50:.2f} "
                f"| {percentile(row.times, 0.95):.2f} "
                f"| {p50 - floor:+.2f} | x{p50 / floor:.2f} | {row.cpu_ms:.2f} |"
            )
    print(
        "\nserver CPU per call: of the server process the client talks to (the upstream for "
        "the floor; the proxy alone, without its upstream, for pegboard and FastMCP)."
    )


class AsyncRawSession:
    """An MCP session over its own ``httpx2.AsyncClient`` (one kept-alive connection)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx2.AsyncClient(timeout=120)
        self.headers = dict(ACCEPT)
        self.next_id = 1

    async def rpc(self, method: str, params: dict[str, Any], notification: bool = False) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notification:
            message["id"] = self.next_id
            self.next_id += 1
        answer = await self.http.post(self.url, headers=self.headers, content=json.dumps(message))
        answer.raise_for_status()
        if "mcp-session-id" in answer.headers:
            self.headers["mcp-session-id"] = answer.headers["mcp-session-id"]
            self.headers["mcp-protocol-version"] = INIT["protocolVersion"]
        if notification:
            return None
        text = answer.text
        if not text.startswith("{"):
            text = next(ln[6:] for ln in text.splitlines() if ln.startswith("data: "))
        return json.loads(text)["result"]

    async def touch(self, tool: str) -> None:
        """A call before a throughput window: a kept-alive connection that the server closed
        while this session waited for its turn (uvicorn's keep-alive timeout is 5 s, as long
        as six other servers' windows) is opened again here, not in the timed calls."""
        try:
            await self.rpc("tools/call", {"name": tool, "arguments": ECHO})
        except (httpx2.ReadError, httpx2.RemoteProtocolError):
            await self.rpc("tools/call", {"name": tool, "arguments": ECHO})

    async def open(self, tool: str) -> None:
        await self.rpc("initialize", INIT)
        await self.rpc("notifications/initialized", {}, notification=True)
        for _ in range(600):
            if tool in [t["name"] for t in (await self.rpc("tools/list", {}))["tools"]]:
                return
            await anyio.sleep(0.1)
        raise RuntimeError(f"{tool} never listed at {self.url}")


@dataclass
class Driven:
    """A throughput row: calls, seconds and server CPU seconds summed over its windows, and
    each window's calls/s."""

    calls: int = 0
    seconds: float = 0.0
    cpu_s: float = 0.0
    client_s: float = 0.0  # this process's CPU (the clients)
    upstream_s: float = 0.0  # the server's children's CPU (a proxy's upstream)
    rates: list[float] = field(default_factory=list)

    def add(self, window: Window) -> None:
        self.calls += window.calls
        self.seconds += window.seconds
        self.cpu_s += window.cpu_s
        self.client_s += window.client_s
        self.upstream_s += window.upstream_s
        self.rates.append(window.calls / window.seconds)

    def per_call_ms(self, seconds: float) -> float:
        return seconds * 1000 / max(1, self.calls)

    @property
    def rate(self) -> float:
        return self.calls / max(self.seconds, 1e-9)

    @property
    def cpu_ms(self) -> float:
        return self.per_call_ms(self.cpu_s)


@dataclass
class Window:
    """One throughput window of one server: calls, seconds, and CPU seconds of the server,
    of this process (the clients) and of the server's children (its upstream)."""

    calls: int
    seconds: float
    cpu_s: float
    client_s: float
    upstream_s: float


async def throughput(
    setup: Setup, levels: list[int], seconds: float, rounds: int
) -> dict[int, dict[str, Driven]]:
    """clients -> target -> its row: ``rounds`` windows of ``seconds / rounds`` each, the
    targets taking turns window by window (in reverse every other round), so that load
    arriving or leaving meanwhile falls on all of them alike."""
    found: dict[int, dict[str, Driven]] = {}
    async with http_targets(setup, lite=True) as targets:
        for clients in levels:
            rows = found[clients] = {target.label: Driven() for target in targets}
            async with AsyncExitStack() as stack:
                await _level(targets, clients, seconds, rounds, rows, stack)
    return found


async def _level(
    targets: list[Target],
    clients: int,
    seconds: float,
    rounds: int,
    rows: dict[str, Driven],
    stack: AsyncExitStack,
) -> None:
    sessions: dict[str, list[AsyncRawSession]] = {}
    for target in targets:
        sessions[target.label] = [AsyncRawSession(target.url) for _ in range(clients)]
        for session in sessions[target.label]:
            stack.push_async_callback(session.http.aclose)
            await session.open(target.tool)
    for turn in range(rounds):
        for target in targets if turn % 2 == 0 else targets[::-1]:
            rows[target.label].add(await _drive(target, sessions[target.label], seconds / rounds))


async def _drive(target: Target, sessions: list[AsyncRawSession], seconds: float) -> Window:
    """One window of calls from ``sessions`` to ``target``."""
    count = 0
    deadline = time.perf_counter() + seconds

    async def one(session: AsyncRawSession) -> None:
        nonlocal count
        while time.perf_counter() < deadline:
            await session.rpc("tools/call", {"name": target.tool, "arguments": ECHO})
            count += 1

    async with anyio.create_task_group() as tg:  # not timed
        for session in sessions:
            tg.start_soon(session.touch, target.tool)
    upstream_before = children_cpu_seconds(target.pid)
    client_before, cpu_before = time.process_time(), cpu_seconds(target.pid)
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for session in sessions:
            tg.start_soon(one, session)
    elapsed = time.perf_counter() - started
    cpu_s, client_s = cpu_seconds(target.pid) - cpu_before, time.process_time() - client_before
    upstream_s = children_cpu_seconds(target.pid) - upstream_before
    return Window(count, elapsed, cpu_s, client_s, upstream_s)


def print_throughput(found: dict[int, dict[str, Driven]], seconds: float, rounds: int) -> None:
    print(
        f"\nHTTP throughput, tools/call echo, N concurrent sessions for {seconds:g} s each, "
        f"in {rounds} windows taking turns with the other servers\n"
    )
    print(
        "| clients | server | calls/s | windows' calls/s (min-max) | x of FastMCP "
        "| server CPU per call (ms) |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    for clients, rows in found.items():
        for label, row in rows.items():
            spread = f"{min(row.rates):.0f}-{max(row.rates):.0f}"
            print(
                f"| {clients} | {label} | {row.rate:.0f} | {spread} "
                f"| x{row.rate / _fastmcp_rate(rows, label):.2f} | {row.cpu_ms:.2f} |"
            )
    print(
        "\nThe load comes from this process (raw JSON-RPC on httpx2), on the same 2 cores. "
        f"Rows ending {LITE!r} (an extra measure, beside the SDK-upstream rows): the same "
        "proxies in front of the stdlib test server, whose own cost per call is near zero; "
        "their x is against FastMCP in front of the same upstream."
    )
    print_split(found)


def _fastmcp_rate(rows: dict[str, Driven], label: str) -> float:
    """The rate of the FastMCP row in front of the same upstream as ``label``'s row."""
    lite = label.endswith(LITE)
    found = (
        v.rate for k, v in rows.items() if k.startswith("FastMCP") and k.endswith(LITE) == lite
    )
    return next(found, 0.0) or float("nan")  # no call answered in its windows: no ratio


def print_split(found: dict[int, dict[str, Driven]]) -> None:
    """Where a call's time goes: per call, the wall time and the CPU of the clients, the
    server and the server's upstream; the rest is time no process of the chain was running
    (wake-ups, the scheduler) or, with concurrent clients, minus their overlap."""
    print("\nHTTP throughput, where a call's time goes (ms per call; CPU from /proc)\n")
    print("| clients | server | wall | client CPU | proxy CPU | upstream CPU | rest (wall - CPU) |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for clients, rows in found.items():
        for label, row in rows.items():
            wall = 1000 / max(row.rate, 1e-9)
            client, server = row.per_call_ms(row.client_s), row.cpu_ms
            upstream = row.per_call_ms(row.upstream_s)
            direct = label.startswith("direct")  # the server is the upstream: no proxy
            proxy_cell = "-" if direct else f"{server:.2f}"
            upstream, server = (server, 0.0) if direct else (upstream, server)
            rest = wall - client - server - upstream
            print(
                f"| {clients} | {label} | {wall:.2f} | {client:.2f} | {proxy_cell} "
                f"| {upstream:.2f} | {rest:+.2f} |"
            )


SECTIONS = ("latency", "throughput", "cpu", "first-call", "first-search", "memory", "cli")


async def main(ns: argparse.Namespace) -> None:
    only = set(ns.only.split(",")) if ns.only else set(SECTIONS)
    versus_stdio.compile_sources(ns.before_src)
    with tempfile.TemporaryDirectory() as name:
        setup = Setup(Path(name), ns.fastmcp_python, ns.before_src)
        setup.write_configs()
        stdio = versus_stdio.Stdio(Path(name) / "stdio", ns.fastmcp_python, ns.before_src)
        if "latency" in only:
            print_latency(await latency(setup, ns.calls, ns.rounds))
        if "throughput" in only:
            levels = [int(n) for n in ns.clients.split(",")]
            found_rates = await throughput(setup, levels, ns.seconds, ns.rounds)
            print_throughput(found_rates, ns.seconds, ns.rounds)
        if "cpu" in only:
            versus_stdio.print_cpu(await versus_stdio.cpu_per_call(stdio, ns.calls), ns.calls)
        if "first-call" in only:
            versus_stdio.print_first_calls(await versus_stdio.first_calls(stdio, ns.starts))
        if "first-search" in only:
            found = {}
            for size in ns.sizes.split(","):
                for pause in (float(p) for p in ns.search_pauses.split(",")):
                    found[(size, pause)] = await versus_stdio.searches(
                        stdio, size, ns.later_searches, pause
                    )
            versus_stdio.print_searches(found)
        if "memory" in only:
            sizes = ns.sizes.split(",")
            versus_stdio.print_memory({s: await versus_stdio.memory(stdio, s) for s in sizes})
        if "cli" in only:
            found = versus_cli.cli_reads(Path(name) / "cli", ns.before_src, ns.starts)
            versus_cli.print_cli(found, ns.starts)
            if ns.cli_instructions:
                counted = versus_cli.cli_instructions(Path(name) / "cli-counted", ns.before_src)
                versus_cli.print_instructions(counted)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help=f"comma-separated sections of {', '.join(SECTIONS)}")
    parser.add_argument("--calls", type=int, default=300, help="timed calls per row")
    parser.add_argument(
        "--rounds", type=int, default=6, help="alternations per latency and throughput row"
    )
    parser.add_argument("--clients", default="1,8,32,64", help="throughput levels")
    parser.add_argument("--seconds", type=float, default=5.0, help="per throughput row")
    parser.add_argument(
        "--cli-instructions",
        action="store_true",
        help="cli section: also each row's instructions under callgrind (needs valgrind)",
    )
    parser.add_argument("--starts", type=int, default=5, help="spawns per first-call row")
    parser.add_argument(
        "--search-pauses", default="0,5", help="seconds between ready and the first search"
    )
    parser.add_argument(
        "--later-searches",
        type=int,
        default=8,
        help="first-search: searches after the first (the first's query every 4th, from the 4th)",
    )
    parser.add_argument(
        "--sizes",
        default="527,5000",
        help="catalog sizes (527: livemcpbench; 5000: livemcpbench + sealtools + metatool pooled)",
    )
    parser.add_argument(
        "--before-src",
        help="a src/ directory of an older pegboard (git archive REV src | tar -x -C DIR): "
        "adds its gateway as a row",
    )
    parser.add_argument(
        "--fastmcp-python", default=str(HERE / ".cache" / "fastmcp" / "bin" / "python")
    )
    anyio.run(main, parser.parse_args())

"""Overhead of ``pegboard serve``: the latency it adds per call, and calls/s with 8 clients.

    .venv/bin/python bench/gateway.py [--calls 400] [--clients 8] [--seconds 5]

Upstream: the SDK test server ``tests/mcp/servers/sdk_server.py`` (tool ``echo``).

Table 1, sequential ``tools/call echo`` latency over stdio, one client:
  * direct: the SDK client talking to the upstream server (baseline, same run);
  * gateway: the SDK client talking to ``pegboard serve --no-defer``, which proxies to the
    same upstream server over stdio;
  * added = gateway - direct (p50 and p95 of the per-call times).
CPU per call is read from /proc for the upstream and gateway processes. Also the in-process
part: ``RegistrySurface.call_tool`` of the same proxied tool without any
client transport (pegboard's own share of the added time: lookup, authorise, validate,
result mapping).

Table 2, start-up with ``--servers`` configured stdio servers (tests/mcp/servers/scripted.py,
15 tools each) of which ``--hanging`` hang (3 never answer ``initialize``, the rest never answer
``tools/list``), all listed once into the catalog before they started hanging: time from
spawning ``pegboard serve`` to its ``initialize`` answer and to its ``tools/list`` answer, raw
JSON-RPC lines on stdio. Baseline in the same run: the same gateway with no server configured
(process start and imports only).

Table 3, throughput with ``--clients`` concurrent clients over streamable HTTP for
``--seconds``: direct to the upstream's HTTP endpoint vs ``pegboard serve --http`` proxying to
the upstream over stdio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
import tomli_w
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from pegboard.config import load_config
from pegboard.gateway.runtime import RuntimeOptions, ToolRuntime

ROOT = Path(__file__).resolve().parents[1]
SDK_SERVER = ROOT / "tests" / "mcp" / "servers" / "sdk_server.py"
SCRIPTED = ROOT / "tests" / "mcp" / "servers" / "scripted.py"
PEGBOARD = str(Path(sys.executable).parent / "pegboard")
ECHO = {"text": "hello"}


def _percentile(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct))]


async def _paired(
    calls: int, first: Callable[[], Awaitable[Any]], second: Callable[[], Awaitable[Any]]
) -> tuple[list[float], list[float], float, float]:
    """Per-call wall times (ms) of two paths, alternating call by call so that load on a
    shared machine hits both alike, plus this process's CPU per call (ms) of each path."""
    for _ in range(20):  # warm-up
        await first()
        await second()
    times: tuple[list[float], list[float]] = ([], [])
    cpu = [0.0, 0.0]
    for _ in range(calls):
        for i, call in enumerate((first, second)):
            started, cpu_started = time.perf_counter(), time.process_time()
            await call()
            times[i].append((time.perf_counter() - started) * 1000)
            cpu[i] += time.process_time() - cpu_started
    return times[0], times[1], cpu[0] * 1000 / calls, cpu[1] * 1000 / calls


def _children() -> dict[int, str]:
    """pid -> command line of this process's children (Linux /proc)."""
    found = {}
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid():
                cmdline = (stat_file.parent / "cmdline").read_bytes().replace(b"\0", b" ")
                found[int(stat_file.parent.name)] = cmdline.decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
    return found


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _env(tmp: Path) -> dict[str, str]:
    return {"PEGBOARD_CONFIG": str(tmp / "config.toml"), "PEGBOARD_DATA_DIR": str(tmp / "data")}


def _write_config(tmp: Path) -> None:
    upstream = {"command": sys.executable, "args": [str(SDK_SERVER), "stdio"]}
    config = {"data_dir": str(tmp / "data"), "servers": {"up": upstream}}
    (tmp / "config.toml").write_text(tomli_w.dumps(config))


class _Changes:
    """Signals each ``notifications/tools/list_changed`` (the gateway lists lazily)."""

    def __init__(self) -> None:
        self.event = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self.event.set()

    async def wait(self) -> None:
        await self.event.wait()
        self.event = anyio.Event()


async def _wait_listed(client: Client, changes: _Changes, name: str) -> None:
    with anyio.fail_after(60):
        while name not in [t.name for t in (await client.list_tools()).tools]:
            await changes.wait()


async def sequential(tmp: Path, calls: int) -> tuple[dict[str, list[float]], dict[str, float]]:
    direct = StdioServerParameters(command=sys.executable, args=[str(SDK_SERVER), "stdio"])
    gateway = StdioServerParameters(
        command=PEGBOARD, args=["serve", "--no-defer"], env=_env(tmp) | {"PATH": "/usr/bin:/bin"}
    )
    out: dict[str, list[float]] = {}
    cpu: dict[str, float] = {}
    changes = _Changes()
    async with (
        Client(stdio_client(direct), mode="legacy") as plain,
        Client(stdio_client(gateway), mode="legacy", message_handler=changes) as proxied,
    ):
        await _wait_listed(proxied, changes, "mcp__up__echo")
        kids = _children()
        upstream = next(pid for pid, cmd in kids.items() if "sdk_server" in cmd)
        gateway_pid = next(pid for pid, cmd in kids.items() if "pegboard" in cmd)
        before = {pid: _cpu_seconds(pid) for pid in (upstream, gateway_pid)}
        direct_label, gateway_label = (
            "direct (SDK client -> upstream)",
            "gateway (SDK client -> pegboard serve)",
        )
        out[direct_label], out[gateway_label], _, _ = await _paired(
            calls,
            lambda: plain.call_tool("echo", ECHO),
            lambda: proxied.call_tool("mcp__up__echo", ECHO),
        )
        # _paired's 20 warm-up calls per path run after ``before``: they are in the divisor.
        cpu[direct_label] = (_cpu_seconds(upstream) - before[upstream]) * 1000 / (calls + 20)
        cpu[gateway_label] = (_cpu_seconds(gateway_pid) - before[gateway_pid]) * 1000 / (calls + 20)
    runtime = ToolRuntime(load_config(tmp / "config.toml"), RuntimeOptions(defer=False))
    listed = anyio.Event()
    runtime.surface.subscribe(listed.set)
    async with runtime.running():
        with anyio.fail_after(60):
            if not runtime.surface.list_tools():
                await listed.wait()

        async def surface() -> Any:
            return await runtime.surface.call_tool(
                "mcp__up__echo", ECHO, call_id="bench", approval=None
            )

        catalog_label, surface_label = (
            "in-process: catalog.call_tool",
            "in-process: gateway surface.call_tool",
        )
        (
            out[catalog_label],
            out[surface_label],
            cpu[catalog_label],
            cpu[surface_label],
        ) = await _paired(calls, lambda: runtime.catalog.call_tool("up", "echo", ECHO), surface)
    return out, cpu


def _line(msg_id: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if msg_id is not None:
        message["id"] = msg_id
    if params is not None:
        message["params"] = params
    return (json.dumps(message) + "\n").encode()


async def startup(tmp: Path) -> tuple[float, float, int]:
    """Seconds from spawn to the initialize and tools/list answers, and the tools listed."""
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    }
    started = time.perf_counter()
    args = [PEGBOARD, "serve", "--no-defer"]
    async with await anyio.open_process(args, env=dict(os.environ) | _env(tmp)) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        await process.stdin.send(
            _line(1, "initialize", init)
            + _line(None, "notifications/initialized")
            + _line(2, "tools/list")
        )
        answers: dict[int, float] = {}
        tools = 0
        buffered = b""
        with anyio.fail_after(60):
            async for chunk in process.stdout:
                buffered += chunk
                *lines, buffered = buffered.split(b"\n")
                for raw in lines:
                    message = json.loads(raw)
                    if message.get("id") in (1, 2):
                        answers[message["id"]] = time.perf_counter() - started
                    if message.get("id") == 2:
                        tools = len(message["result"]["tools"])
                if len(answers) == 2:
                    break
        await process.stdin.aclose()
        await process.wait()
    return answers[1], answers[2], tools


async def startup_table(
    tmp: Path, servers: int, hanging: int
) -> dict[str, tuple[float, float, int]]:
    empty = tmp / "empty"
    empty.mkdir()
    (empty / "config.toml").write_text(tomli_w.dumps({"data_dir": str(empty / "data")}))
    many = tmp / "many"
    many.mkdir()
    table: dict[str, Any] = {}
    for i in range(servers):
        args = [str(SCRIPTED), "--tools", "15", "--mode-file", str(many / f"m{i}")]
        table[f"s{i}"] = {"command": sys.executable, "args": args}
    config = {"data_dir": str(many / "data"), "servers": table}
    (many / "config.toml").write_text(tomli_w.dumps(config))
    await anyio.run_process(
        [PEGBOARD, "servers", "refresh", "--json"], env=dict(os.environ) | _env(many)
    )
    for i in range(hanging):
        (many / f"m{i}").write_text("no-init\n" if i < 3 else "hang-list\n")
    return {
        "gateway, no server configured (baseline)": await startup(empty),
        f"gateway, {servers} servers, {hanging} hanging": await startup(many),
    }


async def _url_from(process: Process, marker: str) -> str:
    assert process.stderr is not None
    assert process.stdout is not None
    text = ""
    stream = process.stdout if marker == "PORT " else process.stderr
    async for chunk in TextReceiveStream(stream):
        text += chunk
        for line in text.splitlines():
            if line.startswith(marker):
                rest = line.removeprefix(marker).split()[0]
                return rest if rest.startswith("http") else f"http://127.0.0.1:{rest}/mcp"
    raise RuntimeError(f"no {marker!r} line; output: {text}")


@asynccontextmanager
async def _http_server(
    args: list[str], marker: str, env: dict[str, str] | None
) -> AsyncIterator[str]:
    async with await anyio.open_process(args, env=env) as process:
        try:
            yield await _url_from(process, marker)
        finally:
            process.terminate()
            await process.wait()


async def throughput(url: str, tool: str, clients: int, seconds: float) -> tuple[int, float]:
    count = 0

    async def one() -> None:
        nonlocal count
        changes = _Changes()
        async with (
            httpx2.AsyncClient() as http,
            Client(
                streamable_http_client(url, http_client=http),
                mode="legacy",
                message_handler=changes,
            ) as client,
        ):
            await _wait_listed(client, changes, tool)
            await ready.wait()
            while time.perf_counter() < deadline:
                await client.call_tool(tool, ECHO)
                count += 1

    ready = anyio.Event()
    deadline = float("inf")
    async with anyio.create_task_group() as tg:
        for _ in range(clients):
            tg.start_soon(one)
        await anyio.sleep(2)  # let every client connect before the clock starts
        started = time.perf_counter()
        deadline = started + seconds
        ready.set()
    return count, time.perf_counter() - started


async def main(calls: int, clients: int, seconds: float, servers: int, hanging: int) -> None:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        _write_config(tmp)
        seq, cpu = await sequential(tmp, calls)
        starts = await startup_table(tmp, servers, hanging)
        direct_args = [sys.executable, str(SDK_SERVER), "http"]
        async with _http_server(direct_args, "PORT ", None) as url:
            direct = await throughput(url, "echo", clients, seconds)
        env = dict(os.environ) | _env(tmp)
        gateway_args = [PEGBOARD, "serve", "--http", "--port", "0", "--no-defer"]
        async with _http_server(gateway_args, "pegboard serving MCP on ", env) as url:
            gateway = await throughput(url, "mcp__up__echo", clients, seconds)

    print(f"\nsequential tools/call echo over stdio, {calls} calls each, interleaved (ms)\n")
    print("| path | p50 | p95 | mean | CPU per call |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, times in seq.items():
        print(
            f"| {label} | {statistics.median(times):.3f} | {_percentile(times, 0.95):.3f} "
            f"| {statistics.fmean(times):.3f} | {cpu[label]:.3f} |"
        )
    labels = list(seq)
    for base, over, what in (
        (labels[0], labels[1], "added by the gateway process"),
        (labels[2], labels[3], "added by pegboard's call path (no transport)"),
    ):
        p50 = statistics.median(seq[over]) - statistics.median(seq[base])
        p95 = _percentile(seq[over], 0.95) - _percentile(seq[base], 0.95)
        print(f"| **{what}** | {p50:.3f} | {p95:.3f} | | |")
    print(
        "\nCPU per call: of the upstream server process (direct row), of the pegboard serve "
        "process (gateway row), of this process (in-process rows)."
    )
    print("\nstart-up of pegboard serve over stdio (s from spawn)\n")
    print("| configuration | initialize answered | tools/list answered | tools listed |")
    print("| --- | ---: | ---: | ---: |")
    for label, (init_s, list_s, count) in starts.items():
        print(f"| {label} | {init_s:.3f} | {list_s:.3f} | {count} |")
    print(f"\nthroughput, {clients} concurrent clients over streamable HTTP, {seconds:g} s\n")
    print("| path | calls | calls/s |")
    print("| --- | ---: | ---: |")
    for label, (count, elapsed) in (("direct (upstream HTTP)", direct), ("gateway", gateway)):
        print(f"| {label} | {count} | {count / elapsed:.0f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--servers", type=int, default=20)
    parser.add_argument("--hanging", type=int, default=5)
    ns = parser.parse_args()
    anyio.run(main, ns.calls, ns.clients, ns.seconds, ns.servers, ns.hanging)

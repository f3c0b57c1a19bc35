"""Overhead of ``pegboard serve``: the latency it adds per call, and calls/s with 8 clients.

    .venv/bin/python bench/gateway.py [--calls 400] [--clients 8] [--seconds 5] [--before-src DIR]

Upstream: the SDK test server ``tests/mcp/servers/sdk_server.py`` (tool ``echo``).

Table 1, sequential ``tools/call echo`` latency over stdio, one client:
  * direct: the SDK client talking to the upstream server (baseline, same run);
  * gateway: the SDK client talking to ``pegboard serve --no-defer``, which proxies to the
    same upstream server over stdio;
  * gateway with its ``tools/call`` fast path off (``PEGBOARD_NO_FAST_CALLS=1``), and with
    ``--before-src DIR`` the gateway of an older checkout (run with ``PYTHONPATH=DIR``);
  * added = gateway - direct (p50 and p95 of the per-call times), and the p50 ratio.
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
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
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
from pegboard.runtime import RuntimeOptions, ToolRuntime
from ready import jsonrpc_line  # bench/ is the script's directory

ROOT = Path(__file__).resolve().parents[1]
SDK_SERVER = ROOT / "tests" / "mcp" / "servers" / "sdk_server.py"
SCRIPTED = ROOT / "tests" / "mcp" / "servers" / "scripted.py"
PEGBOARD = str(Path(sys.executable).parent / "pegboard")
ECHO = {"text": "hello"}


def _percentile(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct))]


async def _interleaved(
    calls: int, paths: dict[str, Callable[[], Awaitable[Any]]]
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Per-call wall times (ms) of each path, alternating call by call so that load on a
    shared machine hits all alike, plus this process's CPU per call (ms) of each path."""
    for _ in range(20):  # warm-up
        for call in paths.values():
            await call()
    times: dict[str, list[float]] = {label: [] for label in paths}
    cpu = dict.fromkeys(paths, 0.0)
    for _ in range(calls):
        for label, call in paths.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            await call()
            times[label].append((time.perf_counter() - started) * 1000)
            cpu[label] += time.process_time() - cpu_started
    return times, {label: total * 1000 / calls for label, total in cpu.items()}


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


GATEWAY = "gateway (SDK client -> pegboard serve)"
NO_FAST = "gateway, fast path off (PEGBOARD_NO_FAST_CALLS=1)"
BEFORE = "gateway, code before (--before-src)"
DIRECT = "direct (SDK client -> upstream)"


def _gateway_params(tmp: Path, extra: dict[str, str]) -> StdioServerParameters:
    env = _env(tmp) | {"PATH": "/usr/bin:/bin"} | extra
    return StdioServerParameters(command=PEGBOARD, args=["serve", "--no-defer"], env=env)


async def sequential(
    tmp: Path, calls: int, before_src: str | None
) -> tuple[dict[str, list[float]], dict[str, float]]:
    direct = StdioServerParameters(command=sys.executable, args=[str(SDK_SERVER), "stdio"])
    gateways = {GATEWAY: {}, NO_FAST: {"PEGBOARD_NO_FAST_CALLS": "1"}}
    if before_src:
        gateways[BEFORE] = {"PYTHONPATH": before_src}
    cpu: dict[str, float] = {}
    async with AsyncExitStack() as stack:
        plain = await stack.enter_async_context(Client(stdio_client(direct), mode="legacy"))
        upstream = next(pid for pid, cmd in _children().items() if "sdk_server" in cmd)
        paths: dict[str, Callable[[], Awaitable[Any]]] = {
            DIRECT: lambda: plain.call_tool("echo", ECHO)
        }
        pids = {DIRECT: upstream}
        for n, (label, extra) in enumerate(gateways.items()):
            # Each gateway its own data directory (catalog, audit file): one gateway's writes
            # must not wake another (a shared catalog is re-read by every process that uses
            # it), and the code before must not meet a newer catalog schema.
            extra = extra | {"PEGBOARD_DATA_DIR": str(tmp / f"data-{n}")}
            known = set(_children())
            changes = _Changes()
            client = await stack.enter_async_context(
                Client(
                    stdio_client(_gateway_params(tmp, extra)),
                    mode="legacy",
                    message_handler=changes,
                )
            )
            pids[label] = next(pid for pid in _children() if pid not in known)
            await _wait_listed(client, changes, "mcp__up__echo")
            paths[label] = partial(client.call_tool, "mcp__up__echo", ECHO)
        before = {label: _cpu_seconds(pid) for label, pid in pids.items()}
        out, _ = await _interleaved(calls, paths)
        # _interleaved's 20 warm-up calls per path run after ``before``: in the divisor.
        for label, pid in pids.items():
            cpu[label] = (_cpu_seconds(pid) - before[label]) * 1000 / (calls + 20)
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

        in_process, in_cpu = await _interleaved(
            calls,
            {
                "in-process: catalog.call_tool": lambda: runtime.catalog.call_tool(
                    "up", "echo", ECHO
                ),
                "in-process: gateway surface.call_tool": surface,
            },
        )
    return out | in_process, cpu | in_cpu


async def startup(tmp: Path, extra: dict[str, str] | None = None) -> tuple[float, float, int]:
    """Seconds from spawn to the initialize and tools/list answers, and the tools listed."""
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    }
    started = time.perf_counter()
    args = [PEGBOARD, "serve", "--no-defer"]
    env = dict(os.environ) | _env(tmp) | (extra or {})
    async with await anyio.open_process(args, env=env) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        await process.stdin.send(
            jsonrpc_line(1, "initialize", init)
            + jsonrpc_line(None, "notifications/initialized")
            + jsonrpc_line(2, "tools/list")
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


def _median_run(runs: list[tuple[float, float, int]]) -> tuple[float, float, int]:
    return sorted(runs)[len(runs) // 2]


async def startup_table(
    tmp: Path, servers: int, hanging: int, repeats: int, before_src: str | None
) -> dict[str, tuple[float, float, int]]:
    """Each row: the run with the median ``initialize`` time of ``repeats`` spawns, the
    configurations alternating spawn by spawn."""
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
    rows: dict[str, tuple[Path, dict[str, str]]] = {
        "gateway, no server configured (baseline)": (empty, {}),
        f"gateway, {servers} servers, {hanging} hanging": (many, {}),
    }
    if before_src:
        rows["code before (--before-src), no server configured"] = (
            empty,
            {"PYTHONPATH": before_src},
        )
    runs: dict[str, list[tuple[float, float, int]]] = {label: [] for label in rows}
    for _ in range(repeats):
        for label, (directory, extra) in rows.items():
            runs[label].append(await startup(directory, extra))
    return {label: _median_run(found) for label, found in runs.items()}


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


async def main(ns: argparse.Namespace) -> None:
    calls, clients, seconds = ns.calls, ns.clients, ns.seconds
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        _write_config(tmp)
        seq, cpu = await sequential(tmp, calls, ns.before_src)
        starts = await startup_table(tmp, ns.servers, ns.hanging, ns.starts, ns.before_src)
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
    pairs = [(DIRECT, label, f"added: {label.split(' (')[0]}") for label in labels[1:-2]]
    pairs.append((labels[-2], labels[-1], "added by pegboard's call path (no transport)"))
    for base, over, what in pairs:
        p50 = statistics.median(seq[over]) - statistics.median(seq[base])
        p95 = _percentile(seq[over], 0.95) - _percentile(seq[base], 0.95)
        ratio = statistics.median(seq[over]) / statistics.median(seq[base])
        print(f"| **{what}** | {p50:.3f} | {p95:.3f} | x{ratio:.2f} of p50 | |")
    print(
        "\nCPU per call: of the upstream server process (direct row), of each pegboard serve "
        "process (gateway rows), of this process (in-process rows). 'xN of p50': the row's "
        "p50 over its baseline's p50 (direct, or catalog.call_tool)."
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
    parser.add_argument("--starts", type=int, default=3, help="spawns per start-up row")
    parser.add_argument(
        "--before-src",
        help="a src/ directory of an older pegboard (git archive REV src | tar -x -C DIR): "
        "adds its gateway as rows of the latency and start-up tables",
    )
    anyio.run(main, parser.parse_args())

"""The stdio sections of ``bench/versus.py``: CPU per call, first call and first search after
a spawn, and memory at catalog sizes. Raw JSON-RPC lines on pipes (no client library in the
way); each proxy's own process is measured, never its upstream."""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import tomli_w
from anyio.abc import Process

from eval_data import EVAL_DIR  # bench/ is the script's directory

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SDK_SERVER = ROOT / "tests" / "mcp" / "servers" / "sdk_server.py"
CATALOG_SERVER = HERE / "catalog_server.py"
RELAY = HERE / "relay.py"
FASTMCP_PROXY = HERE / "fastmcp_proxy.py"
PEGBOARD = str(Path(sys.executable).parent / "pegboard")
EVAL = EVAL_DIR
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}


def compile_sources(before_src: str | None) -> None:
    """Byte-compile this checkout's ``src/`` and the code before's, as an installed pegboard
    is (pip compiles what it installs). An environment may set ``PYTHONDONTWRITEBYTECODE=1``
    (this one does), and a source tree then never gets its ``__pycache__``: every process would
    compile each module it imports again (~0.15 s of CPU for a cache read, more for a serve),
    while ``import mcp.types`` and FastMCP read the bytecode pip wrote. Existing ``.pyc``
    files are read whatever that variable says."""
    import compileall

    for tree in (ROOT / "src", *([Path(before_src)] if before_src else [])):
        compileall.compile_dir(tree, quiet=1)


def cpu_seconds(pid: int) -> float:
    """CPU time of a process's live threads so far, to the nanosecond (the scheduler's
    ``/proc/PID/task/*/schedstat``; ``/proc/PID/stat`` counts in 10 ms clock ticks, which at
    ~0.3 s of CPU per row left +-15% of sampling noise); the clock ticks where it is absent."""
    total, tasks = 0, Path(f"/proc/{pid}/task")
    try:
        for task in tasks.iterdir():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # ended meanwhile
                total += int((task / "schedstat").read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        total = 0
    if total:
        return total / 1e9
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    return rss_parts_mb(pid)["VmRSS"]


def rss_parts_mb(pid: int) -> dict[str, float]:
    """VmRSS and its parts (RssAnon: private heap; RssFile: pages of mapped files, i.e. shared
    libraries, model tables, the stored search index: clean, evictable) of ``pid``, in MB."""
    parts = {"VmRSS": float("nan"), "RssAnon": float("nan"), "RssFile": float("nan")}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":", 1)[0]
        if key in parts:
            parts[key] = int(line.split()[1]) / 1024
    return parts


class Peer:
    """A JSON-RPC client on a spawned process's pipes."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self.next_id = 1
        self._buffer = b""

    async def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        assert self.process.stdin is not None
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.next_id += 1
        await self.process.stdin.send((json.dumps(message) + "\n").encode())
        return self.next_id - 1

    async def notify(self, method: str) -> None:
        assert self.process.stdin is not None
        line = json.dumps({"jsonrpc": "2.0", "method": method}) + "\n"
        await self.process.stdin.send(line.encode())

    async def answer(self, msg_id: int) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            while b"\n" not in self._buffer:
                self._buffer += await self.process.stdout.receive()
            line, self._buffer = self._buffer.split(b"\n", 1)
            if not line.strip():
                continue
            message = json.loads(line)
            if message.get("id") == msg_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"error answer: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return await self.answer(await self.send(method, params))

    async def handshake(self) -> None:
        await self.request("initialize", INIT)
        await self.notify("notifications/initialized")

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.request("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{tool} failed: {result}")
        return result

    async def wait_listed(self, tool: str) -> None:
        for _ in range(900):
            if tool in [t["name"] for t in (await self.request("tools/list"))["tools"]]:
                return
            await anyio.sleep(0.1)
        raise RuntimeError(f"{tool} never listed")


@asynccontextmanager
async def spawned(args: Sequence[str], env: dict[str, str] | None = None) -> AsyncIterator[Peer]:
    async with await anyio.open_process(list(args), env=env, stderr=subprocess.DEVNULL) as process:
        try:
            yield Peer(process)
        finally:
            if process.stdin is not None:
                await process.stdin.aclose()
            with anyio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()


@dataclass
class Proxy:
    """One way to reach an upstream over stdio: the command, and the upstream tool's name."""

    label: str
    args: list[str]
    tool: str
    env: dict[str, str] | None = None


@dataclass
class Stdio:
    """The configurations of the stdio proxies around one upstream command."""

    tmp: Path
    fastmcp_python: str
    before_src: str | None
    upstream: list[str] = field(default_factory=list)
    search: bool = False  # pegboard rows deferred (tool_search offered) instead of --no-defer
    # seconds an upstream may take to answer initialize (None: pegboard's default); a server
    # generating thousands of tools at start needs more on a loaded machine
    connect_timeout: float | None = None

    def pegboard_env(self, name: str, extra: dict[str, str] | None = None) -> dict[str, str]:
        home = self.tmp / name
        return (
            dict(os.environ)
            | {
                "PEGBOARD_CONFIG": str(home / "config.toml"),
                "PEGBOARD_DATA_DIR": str(home / "data"),
                "PEGBOARD_CACHE_DIR": str(home / "cache"),
            }
            | (extra or {})
        )

    async def prepare(self, name: str) -> None:
        """Write the config of pegboard home ``name`` and list the upstream into its cache."""
        home = self.tmp / name
        home.mkdir(parents=True, exist_ok=True)
        upstream = {"command": self.upstream[0], "args": self.upstream[1:], "list_timeout": 60}
        config: dict[str, Any] = {"data_dir": str(home / "data"), "servers": {"up": upstream}}
        if self.connect_timeout is not None:
            config["servers"]["up"] = upstream | {"connect_timeout": self.connect_timeout}
        (home / "config.toml").write_text(tomli_w.dumps(config))
        (home / "fastmcp.json").write_text(json.dumps({"mcpServers": {"up": upstream}}))
        done = await anyio.run_process(
            [PEGBOARD, "servers", "refresh"], env=self.pegboard_env(name), check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"servers refresh failed: {done.stderr.decode()[-500:]}")

    def proxies(self, name: str, tool: str, floors: bool = True) -> list[Proxy]:
        mode = [] if self.search else ["--no-defer"]
        rows = []
        if floors:
            rows += [
                Proxy("direct (the upstream itself, floor)", self.upstream, tool),
                Proxy(
                    "stdlib JSON-RPC relay (floor)",
                    [sys.executable, str(RELAY), *self.upstream],
                    tool,
                ),
            ]
        rows.append(
            Proxy(
                "pegboard serve",
                [PEGBOARD, "serve", *mode],
                f"mcp__up__{tool}",
                self.pegboard_env(name),
            )
        )
        if self.before_src:
            env = self.pegboard_env(name, {"PYTHONPATH": self.before_src})
            rows.append(
                Proxy("pegboard, code before", [PEGBOARD, "serve", *mode], f"mcp__up__{tool}", env)
            )
        fastmcp = [
            self.fastmcp_python,
            str(FASTMCP_PROXY),
            "stdio",
            str(self.tmp / name / "fastmcp.json"),
        ]
        rows.append(Proxy("FastMCP proxy (stdio)", fastmcp, tool))
        return rows


# -- CPU per call ---------------------------------------------------------------------------


async def cpu_per_call(stdio: Stdio, calls: int) -> dict[str, tuple[float, float]]:
    """label -> (p50 ms per sequential call, proxy CPU ms per call), interleaved call by call."""
    stdio.upstream = [sys.executable, str(SDK_SERVER), "stdio"]
    await stdio.prepare("cpu")
    rows = stdio.proxies("cpu", "echo")
    times: dict[str, list[float]] = {r.label: [] for r in rows}
    cpu: dict[str, float] = {}
    async with anyio.create_task_group() as tg, _peers(rows) as peers:
        del tg
        for row, peer in zip(rows, peers, strict=True):
            await peer.handshake()
            await peer.wait_listed(row.tool)
            for _ in range(20):
                await peer.call(row.tool, {"text": "hello"})
        before = {r.label: cpu_seconds(p.process.pid) for r, p in zip(rows, peers, strict=True)}
        for _ in range(calls):
            for row, peer in zip(rows, peers, strict=True):
                started = time.perf_counter()
                await peer.call(row.tool, {"text": "hello"})
                times[row.label].append((time.perf_counter() - started) * 1000)
        for row, peer in zip(rows, peers, strict=True):
            cpu[row.label] = (cpu_seconds(peer.process.pid) - before[row.label]) * 1000 / calls
    return {label: (statistics.median(times[label]), cpu[label]) for label in times}


@asynccontextmanager
async def _peers(rows: list[Proxy]) -> AsyncIterator[list[Peer]]:
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(spawned(r.args, r.env)) for r in rows]


def print_cpu(found: dict[str, tuple[float, float]], calls: int) -> None:
    print(f"\nstdio, sequential tools/call echo, {calls} calls per row interleaved\n")
    print("| path | p50 (ms) | CPU per call of the proxy process (ms) |")
    print("| --- | ---: | ---: |")
    for label, (p50, cpu) in found.items():
        print(f"| {label} | {p50:.3f} | {cpu:.3f} |")
    print("\nCPU: the upstream's own for the direct row; the proxy process alone for the others.")


# -- first call after a spawn -----------------------------------------------------------------


async def first_call(peer: Peer, tool: str, started: float) -> tuple[float, float, float]:
    """Seconds from ``started`` (the spawn) to the initialize answer and to the first
    successful tools/call answer (retried while the proxy says the tool is not there yet), and
    the CPU seconds the proxy process had used by then (every thread; not its children)."""
    await peer.request("initialize", INIT)
    ready = time.perf_counter() - started
    await peer.notify("notifications/initialized")
    with anyio.fail_after(90):
        while True:
            result = await peer.request("tools/call", {"name": tool, "arguments": {"text": "hi"}})
            if not result.get("isError"):
                called = time.perf_counter() - started
                return ready, called, cpu_seconds(peer.process.pid)
            await anyio.sleep(0.01)


BARE = '''
from mcp.server import MCPServer
server = MCPServer("bare")
@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text
server.run("stdio")
'''


async def first_calls(stdio: Stdio, repeats: int) -> dict[str, tuple[float, float, float]]:
    """label -> median (ready s, first call s, proxy CPU s by then) over ``repeats`` spawns,
    rows alternating."""
    stdio.upstream = [sys.executable, str(SDK_SERVER), "stdio"]
    await stdio.prepare("first")
    bare = Proxy("bare SDK server, one tool (floor)", [sys.executable, "-c", BARE], "echo")
    rows = [bare, *stdio.proxies("first", "echo")]
    runs: dict[str, list[tuple[float, float, float]]] = {r.label: [] for r in rows}
    for _ in range(repeats):
        for row in rows:
            started = time.perf_counter()
            async with spawned(row.args, row.env) as peer:
                runs[row.label].append(await first_call(peer, row.tool, started))
    medians = {}
    for label, found in runs.items():
        ready, call, cpu = (statistics.median(run[i] for run in found) for i in range(3))
        medians[label] = (ready, call, cpu)
    return medians


def print_first_calls(found: dict[str, tuple[float, float, float]]) -> None:
    print("\nfirst call after a spawn, stdio (s from spawn; medians)\n")
    print(
        "| path | initialize answered | first tools/call answered | CPU s of the process by then |"
    )
    print("| --- | ---: | ---: | ---: |")
    for label, (ready, call, cpu) in found.items():
        print(f"| {label} | {ready:.3f} | {call:.3f} | {cpu:.2f} |")
    labels = list(found)
    bare_ready = found[labels[0]][0]
    upstream_call = found[labels[1]][1]
    print(
        f"\ntarget for a proxy's first call: bare SDK ready + the upstream's own first call = "
        f"{bare_ready:.3f} + {upstream_call:.3f} = {bare_ready + upstream_call:.3f} s"
    )
    print(
        "CPU: of the process the client spawned (every thread, not its children: the upstream's "
        "own is not in a proxy's row); the load stretches the wall clock, not this"
    )


# -- catalogs: first search and memory ----------------------------------------------------------


def catalog_files(size: str) -> list[str]:
    live = EVAL / "livemcpbench" / "tools.jsonl"
    if size == "527":
        return [str(live)]
    return [
        str(live),
        str(EVAL / "sealtools" / "tools.jsonl"),
        str(EVAL / "metatool" / "tools.jsonl"),
    ]


# The first search's query, then the later ones: each of the others once, the first's again,
# and so on; and at the end, after as long an idle pause as before the first, the first's once
# more. So the first search is compared with the same query (the same postings, words and
# rendering) sent back to back, and with it sent after the same idle time: a search after an
# idle pause costs more CPU on a machine other processes share (its ~10 MB of vectors and the
# interpreter's own working set evicted from the CPU caches meanwhile; session 16 measured +1
# to +2 ms at 5,000 tools, and the same in a bare numpy loop reading as much), so only that
# comparison leaves the start's own one-time work. The first query is the heaviest (five words,
# the longest postings): first vs all later ones' p50 compares different work (~0.5 ms).
SEARCH_QUERIES = ("search the web for news", "send an email", "weather forecast", "read a file")


def search_order(later: int) -> list[str]:
    """The queries of the first search and ``later`` more (cycling :data:`SEARCH_QUERIES`)."""
    return [SEARCH_QUERIES[i % len(SEARCH_QUERIES)] for i in range(later + 1)]


@dataclass(frozen=True)
class Search:
    """One tool_search: wall ms, the process's CPU ms (every thread) and its loop thread's
    (the main thread, where one-time work would stall the other requests)."""

    query: str
    wall: float
    cpu: float
    loop: float


@dataclass
class Searched:
    """One row: its searches in :func:`search_order`, then the first's query again after the
    same idle pause as before the first (``idle``); the process's CPU s at the first answer."""

    searches: list[Search]
    idle: Search
    cpu_at_first: float

    @property
    def first(self) -> Search:
        return self.searches[0]

    def same(self, part: str) -> float:
        """Median ``part`` (wall, cpu, loop) of the later back-to-back searches of the first's
        query."""
        query = self.first.query
        return statistics.median(getattr(s, part) for s in self.searches[1:] if s.query == query)

    def p50(self, part: str) -> float:
        return statistics.median(getattr(s, part) for s in self.searches[1:])


def thread_cpu_seconds(pid: int, tid: int) -> float:
    """CPU time of one thread of ``pid`` so far (schedstat; 0.0 if it has ended)."""
    try:
        return int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0]) / 1e9
    except (FileNotFoundError, ProcessLookupError, ValueError, IndexError):
        return 0.0


async def _search(peer: Peer, query: str) -> Search:
    pid = peer.process.pid
    cpu_before, loop_before = cpu_seconds(pid), thread_cpu_seconds(pid, pid)
    started = time.perf_counter()
    await peer.request("tools/call", {"name": "tool_search", "arguments": {"query": query}})
    wall = (time.perf_counter() - started) * 1000
    cpu = (cpu_seconds(pid) - cpu_before) * 1000
    return Search(query, wall, cpu, (thread_cpu_seconds(pid, pid) - loop_before) * 1000)


async def searches(stdio: Stdio, size: str, later: int, pause: float) -> dict[str, Searched]:
    """pegboard rows (deferred): the first tool_search sent ``pause`` s after the initialize
    answer, then ``later`` more (:func:`search_order`, which repeats the first query), then
    the first's query once more after ``pause`` s idle."""
    stdio.upstream = [sys.executable, str(CATALOG_SERVER), *catalog_files(size)]
    stdio.search = True
    name = f"search{size}-{pause:g}"  # a fresh data directory for each row pair
    await stdio.prepare(name)
    proxies = [r for r in stdio.proxies(name, "x", floors=False) if r.label.startswith("pegboard")]
    if stdio.before_src:  # the code before gets a data directory of its own, and two rows
        await stdio.prepare(f"{name}-before")
        env = stdio.pegboard_env(f"{name}-before", {"PYTHONPATH": stdio.before_src})
        proxies = [
            dataclass_replace(r, env=env) if r.env and "PYTHONPATH" in r.env else r for r in proxies
        ]
    rows = _first_and_later(proxies, before_too=True)
    found: dict[str, Searched] = {}
    for row in rows:
        async with spawned(row.args, row.env) as peer:
            await peer.handshake()
            await peer.request("tools/list")
            await anyio.sleep(pause)
            done: list[Search] = []
            for query in search_order(later):
                done.append(await _search(peer, query))
                if len(done) == 1:
                    cpu_at_first = cpu_seconds(peer.process.pid)
            await anyio.sleep(pause)
            found[row.label] = Searched(done, await _search(peer, done[0].query), cpu_at_first)
            if row.label == "pegboard serve, first start":  # as a serve that ran a while
                await _snapshot_searchable(row.env)
    stdio.search = False
    return found


async def _snapshot_searchable(env: dict[str, str] | None, within: float = 30.0) -> None:
    """Wait (at most ``within`` s) until the serve still running with ``env`` has written its
    ready snapshot's ``search`` section, which its warm-up adds once the index is loaded and
    every line counted: a first start cut short leaves a later start without it."""
    data = Path((env or {}).get("PEGBOARD_DATA_DIR", "/nonexistent")) / "ready"
    for _ in range(int(within / 0.1)):
        if any("search" in _json_or_empty(p) for p in data.glob("*.json")):
            return
        await anyio.sleep(0.1)


def _json_or_empty(path: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _first_and_later(rows: list[Proxy], before_too: bool = False) -> list[Proxy]:
    """This checkout's row twice: its first start in a fresh data directory (it builds the
    search index and counts every token) and a later one (it loads both from the data
    directory); the code before runs once (it kept nothing before session 7), or twice too
    with ``before_too`` (first-search: its own data directory, for a code before that keeps
    its index)."""
    twice = {"pegboard serve", "pegboard, code before"} if before_too else {"pegboard serve"}
    out: list[Proxy] = []
    for row in rows:
        if row.label in twice:
            out.append(dataclass_replace(row, label=f"{row.label}, first start"))
            out.append(dataclass_replace(row, label=f"{row.label}, later start"))
        else:
            out.append(row)
    return out


def _wall_cells(row: Searched) -> list[str]:
    wall, idle, p50 = row.first.wall, row.idle.wall, row.p50("wall")
    return [
        f"{wall:.1f}",
        f"{idle:.1f}",
        f"x{wall / idle:.2f}",
        f"{row.same('wall'):.1f}",
        f"{p50:.1f}",
        f"x{wall / p50:.2f}",
        f"{row.cpu_at_first:.2f}",
    ]


def _cpu_cells(row: Searched) -> list[str]:
    cpu, idle, loop, loop_idle = row.first.cpu, row.idle.cpu, row.first.loop, row.idle.loop
    return [
        f"{cpu:.2f}",
        f"{idle:.2f}",
        f"{cpu - idle:+.2f}",
        f"{row.same('cpu'):.2f}",
        f"{row.p50('cpu'):.2f}",
        f"{loop:.2f}",
        f"{loop_idle:.2f}",
        f"{loop - loop_idle:+.2f}",
    ]


SEARCH_TABLES = (
    (
        "",
        "first search (ms) | same query after idle | first / after idle | same query back to "
        "back | later p50 | first / later p50 | CPU s of the process at the first answer",
        _wall_cells,
    ),
    (
        "CPU ms during each search: of the process (every thread) and of its loop thread (the "
        "main thread), which the load stretches far less than the wall; first - after idle is "
        "the start's own one-time CPU",
        "process CPU, first | same query after idle | first - after idle | same query back to "
        "back | later p50 | loop thread, first | after idle | first - after idle",
        _cpu_cells,
    ),
)


def print_searches(found: dict[tuple[str, float], dict[str, Searched]]) -> None:
    later = len(next(iter(next(iter(found.values())).values())).searches) - 1
    first = SEARCH_QUERIES[0]
    print(
        f"\nfirst tool_search after a spawn vs later ones, pegboard serve deferred: the first "
        f"is {first!r}; then {later} back to back: {', '.join(map(repr, search_order(later)[1:]))}"
        f"; then {first!r} again after the same idle pause as the first ('after idle'); "
        f"'same query' = the median of the back-to-back searches of {first!r}"
    )
    for title, columns, cells in SEARCH_TABLES:
        print(f"\n{title}\n" if title else "")
        print(f"| catalog | sent after ready | server | {columns} |")
        print("| --- | ---: | --- |" + " ---: |" * (columns.count("|") + 1))
        for (size, pause), rows in found.items():
            for label, row in rows.items():
                print(f"| {size} tools | {pause:g} s | {label} | " + " | ".join(cells(row)) + " |")


# The second reading of each memory row: the same process this long after its call, idle.
SETTLE_S = 2.0


async def memory(stdio: Stdio, size: str) -> dict[str, dict[str, float]]:
    """label -> RSS and its parts (MB, :func:`rss_parts_mb`) of the proxy process after
    tools/list, one tool_search (deferred rows) and one tools/call; and again (``<label>, 2 s
    later``) after :data:`SETTLE_S` idle, when a listing still running at the call (an upstream
    of 5,000 tools) has ended."""
    stdio.upstream = [sys.executable, str(CATALOG_SERVER), *catalog_files(size)]
    name = f"mem{size}"
    await stdio.prepare(name)
    tool = "bing_search"
    found: dict[str, dict[str, float]] = {}
    rows: list[tuple[Proxy, bool]] = [(r, False) for r in stdio.proxies(name, tool)]
    stdio.search = True
    deferred = _first_and_later(
        [r for r in stdio.proxies(name, tool, floors=False) if r.label.startswith("pegboard")]
    )
    stdio.search = False
    rows[2:2] = [(dataclass_replace(r, label=f"{r.label}, deferred"), True) for r in deferred]
    for row, search in rows:
        async with spawned(row.args, row.env) as peer:
            await peer.handshake()
            if search:
                await peer.request("tools/list")
                await peer.request(
                    "tools/call", {"name": "tool_search", "arguments": {"query": "search the web"}}
                )
                await peer.request(
                    "tools/call",
                    {
                        "name": "tool_invoke",
                        "arguments": {"name": row.tool, "params": {"query": "x"}},
                    },
                )
            else:
                await peer.wait_listed(row.tool)
                await peer.request("tools/call", {"name": row.tool, "arguments": {"query": "x"}})
            found[row.label] = rss_parts_mb(peer.process.pid)
            await anyio.sleep(SETTLE_S)
            found[f"{row.label}, {SETTLE_S:g} s later"] = rss_parts_mb(peer.process.pid)
    return found


def dataclass_replace(row: Proxy, **changes: Any) -> Proxy:
    from dataclasses import replace

    return replace(row, **changes)


def print_memory(found: dict[str, dict[str, dict[str, float]]]) -> None:
    sizes = list(found)
    titles = {
        "VmRSS": "RSS of the serving process (MB) after tools/list, a search (deferred rows), "
        "a call",
        "RssAnon": "of which anonymous (RssAnon: the process's own heap, MB)",
        "RssFile": "of which file-backed (RssFile: shared libraries, mapped model tables and "
        "search index; clean pages the kernel can drop, MB)",
    }
    for part, title in titles.items():
        print(f"\n{title}\n")
        print("| process | " + " | ".join(f"{s} tools" for s in sizes) + " |")
        print("| --- | " + " | ".join("---:" for _ in sizes) + " |")
        for label in found[sizes[0]]:
            cells = [found[s].get(label, {}).get(part, float("nan")) for s in sizes]
            print(f"| {label} | " + " | ".join(f"{c:.0f}" for c in cells) + " |")

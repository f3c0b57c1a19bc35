"""Overhead of ``tool_exec``: per run start and per tool call from inside the Monty sandbox.

    .venv/bin/python bench/exec.py [--runs 200] [--calls 100]

Every row is measured in the same process, interleaved round by round in a shuffled order so
that load on a shared machine hits all alike, with the same tool ``echo(text)`` (an async
function that returns its argument):

* run start: ``run_code("1", {})`` (checkout of a warm worker, feed, result), and the
  ``tool_exec`` Tool's whole ``run`` (plus output formatting); baseline: one direct
  ``await echo(text=...)`` in the host;
* per tool call: a run of ``for _ in range(N): await echo(text=...)`` minus a run of the same
  loop with N = 0, divided by N; sequential and with ``gather`` of N calls; through the
  engine alone (the tool is the raw callable) and through ``make_tool_exec`` with the one
  call path (``execute_entry``: authorise, validate, audit), beside a direct ``execute_entry``
  call of the same entry, a direct ``await echo(...)``, and Monty alone (``AsyncMonty`` used
  directly with the same limits, the raw coroutine as external function: Monty's own share);
* the same loop through the gateway's path: ``RegistrySurface.call_tool("tool_exec", ...)``
  of a surface whose deferral injected ``tool_exec`` (the ``pegboard serve`` route minus the
  MCP transport: toolset, approval, audit of the outer call, then each inner call resolved in
  the request's allowed set and run through ``execute_entry``).

Targets (SPEC section 10): < 1 ms per run start, < 0.2 ms per in-sandbox tool call.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from pegboard.calls import Call, CallSession, execute_entry
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ToolApplyScope
from pegboard.core.tool import Tool, ToolContext
from pegboard.deferral.tool_exec import ExecSettings
from pegboard.sandbox import ExecLimits, default_sandbox, run_code
from pegboard.sandbox.limits import monty_limits
from pegboard.sandbox.tool import make_tool_exec
from pegboard.toolsets.exposure import RegistrySurface

CTX = ToolContext(call_id="bench")


async def echo(text: str) -> str:
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    anyio.run(bench, args.runs, args.calls)


async def bench(runs: int, calls: int) -> None:
    limits = ExecLimits(max_tool_calls=calls + 10)
    entry = ToolEntry(name="echo", namespace="bench", tool=Tool.from_function(echo))
    session = CallSession()

    async def call_tool(name: str, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        call = Call(name, args, ctx, via="tool_exec", session=session, interactive=False)
        return await execute_entry(entry, call)

    tool_exec = make_tool_exec(call_tool, [entry], limits)
    surface = gateway_surface(entry, limits)
    assert "tool_exec" in surface.tools.names, "deferral did not inject tool_exec"

    async def via_gateway(code: str) -> None:
        out = await surface.call_tool("tool_exec", {"code": code}, call_id="b", approval=None)
        assert not out.is_error, out.as_text()

    loop = f"for _ in range({calls}):\n    await echo(text='hello')\n1"
    empty = "for _ in range(0):\n    await echo(text='hello')\n1"
    fan = f"await gather(*[echo(text='hello') for _ in range({calls})])\n1"
    fan0 = "await gather(*[echo(text='hello') for _ in range(0)])\n1"

    from pydantic_monty import AsyncMonty

    pool = AsyncMonty(min_processes=1, max_processes=2, request_timeout=10)
    await pool.__aenter__()

    async def raw(code: str) -> None:
        async with pool.checkout(limits=monty_limits(limits)) as session:  # type: ignore[arg-type]
            await session.feed_run(
                code, external_lookup={"echo": echo}, print_callback=print_nothing
            )

    async def direct_loop() -> None:
        for _ in range(calls):
            await echo(text="hello")

    async def entry_loop() -> None:
        for _ in range(calls):
            call = Call("echo", {"text": "hello"}, CTX, via="direct", session=session)
            await execute_entry(entry, call)

    paths: dict[str, Callable[[], Awaitable[Any]]] = {
        "start: run_code('1')": lambda: run_code("1", {}, limits),
        "start: tool_exec Tool.run('1')": lambda: tool_exec.run({"code": "1"}, CTX),
        "start baseline: direct await echo()": lambda: echo(text="hello"),
        "start baseline: Monty alone, checkout + feed '1'": lambda: raw("1"),
        "loop engine": lambda: run_code(loop, {"echo": echo}, limits),
        "loop engine, N=0": lambda: run_code(empty, {"echo": echo}, limits),
        "gather engine": lambda: run_code(fan, {"echo": echo}, limits),
        "gather engine, N=0": lambda: run_code(fan0, {"echo": echo}, limits),
        "loop tool_exec": lambda: tool_exec.run({"code": loop}, CTX),
        "loop tool_exec, N=0": lambda: tool_exec.run({"code": empty}, CTX),
        "loop gateway tool_exec": lambda: via_gateway(loop),
        "loop gateway tool_exec, N=0": lambda: via_gateway(empty),
        "loop raw Monty": lambda: raw(loop),
        "loop raw Monty, N=0": lambda: raw(empty),
        "loop direct execute_entry": entry_loop,
        "loop direct await": direct_loop,
    }
    times = await interleaved(runs, paths)
    med = {label: statistics.median(samples) for label, samples in times.items()}
    p95 = {label: sorted(s)[int(len(s) * 0.95)] for label, s in times.items()}

    print(f"\ntool_exec run start ({runs} runs each, interleaved; ms)\n")
    print("| path | p50 | p95 |")
    print("| --- | ---: | ---: |")
    for label in (
        "start: run_code('1')",
        "start: tool_exec Tool.run('1')",
        "start baseline: direct await echo()",
        "start baseline: Monty alone, checkout + feed '1'",
    ):
        print(f"| {label.split(': ', 1)[1]} | {med[label]:.3f} | {p95[label]:.3f} |")

    def per_call(full: str, zero: str) -> float:
        return (med[full] - med[zero]) / calls

    rows = [
        ("sandbox, sequential await (engine)", per_call("loop engine", "loop engine, N=0")),
        ("sandbox, gather (engine)", per_call("gather engine", "gather engine, N=0")),
        (
            "sandbox via tool_exec + execute_entry",
            per_call("loop tool_exec", "loop tool_exec, N=0"),
        ),
        (
            "sandbox via the gateway's path (RegistrySurface, deferral-injected tool_exec)",
            per_call("loop gateway tool_exec", "loop gateway tool_exec, N=0"),
        ),
        (
            "Monty alone (AsyncMonty, no pegboard)",
            per_call("loop raw Monty", "loop raw Monty, N=0"),
        ),
        ("baseline: direct execute_entry", med["loop direct execute_entry"] / calls),
        ("baseline: direct await echo()", med["loop direct await"] / calls),
    ]
    print(f"\nper tool call ({calls} calls per run, median run minus the N=0 run; ms)\n")
    print("| path | per call |")
    print("| --- | ---: |")
    for label, value in rows:
        print(f"| {label} | {value:.4f} |")
    await default_sandbox().aclose()
    await pool.__aexit__(None, None, None)


def gateway_surface(entry: ToolEntry, limits: ExecLimits) -> RegistrySurface:
    """A gateway surface over ``echo``, deferred (``defer="always"``) so ``tool_exec`` is
    injected beside the meta-tools."""
    deferred = ToolEntry(name="echo", namespace="bench", tool=entry.tool, defer="always")
    return RegistrySurface(
        ToolRegistry([deferred]), ToolApplyScope, tool_exec=ExecSettings(limits=limits)
    )


def print_nothing(stream: str, text: str) -> None:
    del stream, text


async def interleaved(
    runs: int, paths: dict[str, Callable[[], Awaitable[Any]]]
) -> dict[str, list[float]]:
    for _ in range(10):  # warm-up: the pool's first worker, caches
        for call in paths.values():
            await call()
    times: dict[str, list[float]] = {label: [] for label in paths}
    order = list(paths.items())
    shuffle = random.Random(7).shuffle  # whoever runs first after a pause pays the wake-up
    for _ in range(runs):
        shuffle(order)
        for label, call in order:
            started = time.perf_counter()
            await call()
            times[label].append((time.perf_counter() - started) * 1000)
    return times


if __name__ == "__main__":
    main()

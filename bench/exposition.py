"""What deferral saves on a real MCP catalog, and how fast tool_search answers as pools grow.

    .venv/bin/python bench/exposition.py [--sizes 500,5000,50000] [--repeat 3]

Part 1, tokens (livemcpbench, 527 tools from 70 real MCP servers, o200k counter): the
inline cost of every tool definition, the deferred cost (the three injected meta-tools plus
the generated prompt section), the saving, and the same for the OpenAI Chat tools JSON as
sent on the wire. Part 2, latency: ``search_pool`` (ranked search + rendering, what the
``tool_search`` tool runs) over pools of 500 / 5,000 / 50,000 tools (synthetic copies of the
catalog under renamed servers), queried with the 95 livemcpbench tasks (``--repeat`` rounds);
baseline in the same run, one round: the reference design's substring filter
(``registry.get_all(query)``). Part 3: per-call overhead of the dispatcher and of
``tool_invoke`` (approval check, validation, audit) over a raw ``tool.run``. Prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import anyio

from eval_data import EVAL_DIR  # bench/ is the script's directory
from pegboard.agent.params import build_agent_params
from pegboard.core.entry import ToolEntry, ToolSource
from pegboard.core.names import mcp_tool_name
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ModelInfo, ToolApplyScope
from pegboard.core.tokens import count_entries, default_token_counter
from pegboard.core.tool import Tool, ToolContext
from pegboard.deferral import apply_defer_exposition, search_pool, should_defer
from pegboard.deferral.definitions import DEFINITIONS, INJECTED_META_TOOLS
from pegboard.formats import ToolCall, to_chat_tools
from pegboard.search import default_index
from pegboard.search.synced import registry_index

EVAL = EVAL_DIR / "livemcpbench"


def load_rows() -> list[dict[str, Any]]:
    with (EVAL / "tools.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def load_queries() -> list[str]:
    with (EVAL / "queries.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line)["query"] for line in fh]


def entries_for(rows: list[dict[str, Any]], copies: int, defer: Any = "auto") -> list[ToolEntry]:
    entries = []
    for copy in range(copies):
        for row in rows:
            server = row["server"] if copy == 0 else f"{row['server']}-{copy}"
            tool = Tool(row["description"], row["input_schema"])
            entries.append(
                ToolEntry(
                    name=mcp_tool_name(server, server, row["name"]),
                    namespace=f"mcp:{server}",
                    tool=tool,
                    defer=defer,
                    source=ToolSource(server, row["name"]),
                )
            )
    return entries


def token_table(rows: list[dict[str, Any]]) -> None:
    counter = default_token_counter()
    entries = entries_for(rows, 1)
    registry = ToolRegistry()
    registry.register_many(entries)
    inline = count_entries(entries, counter)
    exposition = apply_defer_exposition(
        {e.name: e.tool for e in entries}, registry, 128_000, counter=counter
    )
    meta = sum(counter.count_tool(DEFINITIONS[n]) for n in INJECTED_META_TOOLS)
    section = counter.count_text(exposition.prompt_section)
    deferred = meta + section
    wire_inline = counter.count_text(json.dumps(to_chat_tools(entries)))
    meta_entries = [ToolEntry(n, "meta", t) for n, t in exposition.tools.items()]
    wire_deferred = counter.count_text(json.dumps(to_chat_tools(meta_entries))) + section
    decision32 = should_defer(entries, 32_000, counter)
    print(f"livemcpbench: {len(entries)} tools, {len({e.namespace for e in entries})} servers")
    print(
        f"deferred at 128k context: {len(exposition.deferred)} tools; at 32k: "
        f"{len(decision32.names)} (threshold {decision32.threshold}, "
        f"measured overhead {decision32.overhead})\n"
    )
    print("| measure (o200k tokens) | inline | deferred | saving | deferred / inline |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, full, small in (
        ("definitions (name + description + schema)", inline, deferred),
        ("OpenAI Chat tools JSON + prompt section", wire_inline, wire_deferred),
    ):
        print(
            f"| {label} | {full:,} | {small:,} | {(full - small) / full:.1%} | {small / full:.2%} |"
        )
    print(f"\ndeferred cost = meta-tools {meta} + prompt section {section}\n")


def latency_table(rows: list[dict[str, Any]], sizes: list[int], repeat: int) -> None:
    queries = load_queries()
    print(f"tool_search latency: {len(queries)} livemcpbench tasks x {repeat}, limit 8\n")
    print(
        "| pool | index build (s) | search p50 (ms) | search p99 (ms) | "
        "baseline substring p50 (ms) | baseline p99 (ms) |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for size in sizes:
        copies = -(-size // len(rows))
        entries = entries_for(rows, copies, defer="always")[:size]
        registry = ToolRegistry()
        registry.register_many(entries)
        started = time.perf_counter()
        registry_index(registry, lambda: default_index(cache=False))  # a cold build
        build = time.perf_counter() - started
        pool = apply_defer_exposition({e.name: e.tool for e in entries}, registry, 128_000).pool
        assert pool is not None
        ours, base = [], []
        for round_ in range(repeat):
            for query in queries:
                t0 = time.perf_counter()
                search_pool(pool, [query], limit=8)
                ours.append(time.perf_counter() - t0)
                if round_ == 0:  # the slow baseline once per query
                    t1 = time.perf_counter()
                    registry.get_all(query=query)
                    base.append(time.perf_counter() - t1)
        print(
            f"| {size:,} | {build:.2f} | {_pct(ours, 50):.2f} | {_pct(ours, 99):.2f} | "
            f"{_pct(base, 50):.2f} | {_pct(base, 99):.2f} |"
        )


def overhead_table(calls: int) -> None:
    """Per-call cost of the dispatcher (direct) and of tool_invoke over a raw tool.run."""

    async def noop(args: dict[str, Any], ctx: ToolContext) -> str:
        return "ok"

    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    entries = [
        ToolEntry(f"t{i}", "bench", Tool("No-op.", schema, execute=noop), defer="always")
        for i in range(10)
    ]
    inline = ToolEntry("inline", "bench", Tool("No-op.", schema, execute=noop), defer="never")
    registry = ToolRegistry()
    registry.register_many([*entries, inline])
    params = build_agent_params(registry, ToolApplyScope(), ModelInfo("m", "openai", 32_000))
    dispatcher = params.dispatcher
    invoke = ToolCall("c", "tool_invoke", {"name": "t3", "params": {"q": "x"}})
    direct = ToolCall("c", "inline", {"q": "x"})

    async def measure() -> list[tuple[str, float]]:
        rows = []
        for label, fn in (
            ("raw tool.run (no checks)", lambda: inline.tool.run({"q": "x"}, ToolContext("c"))),
            ("dispatcher, direct call", lambda: dispatcher.call(direct)),
            ("dispatcher, tool_invoke", lambda: dispatcher.call(invoke)),
        ):
            samples = []
            for _ in range(calls):
                t0 = time.perf_counter()
                await fn()
                samples.append(time.perf_counter() - t0)
            rows.append((label, statistics.median(samples) * 1e6))
        return rows

    rows = anyio.run(measure)
    print(f"\nper-call overhead, no-op async tool, median of {calls:,} calls\n")
    print("| path | median (us) | over raw (us) |")
    print("| --- | ---: | ---: |")
    for label, micros in rows:
        print(f"| {label} | {micros:.1f} | {micros - rows[0][1]:+.1f} |")


def _pct(samples: list[float], pct: int) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))
    return ordered[index] * 1000 if pct != 50 else statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="500,5000,50000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    rows = load_rows()
    token_table(rows)
    latency_table(rows, [int(s) for s in args.sizes.split(",")], args.repeat)
    overhead_table(args.calls)


if __name__ == "__main__":
    main()

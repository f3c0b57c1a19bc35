"""``/metrics`` of a real ``pegboard serve --http`` after a scripted run of real MCP clients:
each counter and gauge has the value the run implies, and the labels stay bounded."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import httpx2
import pytest
import tomli_w
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from pegboard import open_runtime
from pegboard.admin.metrics import HELD, GatewayMetrics
from pegboard.calls.audit import CallRecord
from pegboard.core.events import CallFinished, McpRequestHandled
from pegboard.service import Service
from tests.admin.served import serving_async
from tests.gateway.harness import STARTUP_BOUND, sdk_server, text_of, victim_server

pytestmark = pytest.mark.anyio
TOKEN = "metrics-token-77"


def value(text: str, name: str, **labels: str) -> float:
    """The sample ``name{labels}`` of a scrape (0 when absent)."""
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        head, _, number = line.rpartition(" ")
        found = dict(re.findall(r'(\w+)="([^"]*)"', head))
        if head.split("{")[0] == name and found == labels:
            return float(number)
    return 0.0


async def test_metrics_count_a_scripted_run_and_keep_labels_bounded(tmp_path: Path) -> None:
    config = {"servers": {"toolbox": sdk_server(), "bulk": victim_server("--tools", "30")}}
    env = {"PEGBOARD_TOKEN": TOKEN}
    args = ("--context-window", "8000")
    async with serving_async(tmp_path, config, *args, env=env, refreshed=True) as served:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with anyio.fail_after(STARTUP_BOUND):
            async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
                async with Client(
                    streamable_http_client(served.url, http_client=http), mode="legacy"
                ) as client:
                    await client.list_tools()
                    await client.call_tool("tool_search", {"query": "add two integers"})
                    for a in (1, 2):
                        call = {"name": "mcp__toolbox__add", "params": {"a": a, "b": 1}}
                        assert not (await client.call_tool("tool_invoke", call)).is_error
                    failed = {"name": "mcp__toolbox__fail", "params": {"reason": "no"}}
                    assert (await client.call_tool("tool_invoke", failed)).is_error
                    unknown = await client.call_tool("mcp__nobody__nothing", {})
                    assert "not found" in text_of(unknown).lower()
                async with Client(
                    streamable_http_client(served.url, http_client=http), mode="legacy"
                ) as other:  # another session: its invoke had no search before it
                    call = {"name": "mcp__toolbox__echo", "params": {"text": "hi"}}
                    assert text_of(await other.call_tool("tool_invoke", call)) == "hi"
                async with httpx2.AsyncClient(timeout=30) as anonymous:
                    assert (await anonymous.get(f"{served.base}/metrics")).status_code == 401
                scraped = await http.get(f"{served.base}/metrics")
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = scraped.text
    calls = "pegboard_tool_calls_total"
    add = {"server": "toolbox", "tool": "mcp__toolbox__add", "route": "tool_invoke"}
    assert value(text, calls, **add, outcome="ok") == 2
    fail = {"server": "toolbox", "tool": "mcp__toolbox__fail", "route": "tool_invoke"}
    assert value(text, calls, **fail, outcome="McpToolError") == 1
    meta = {"server": "meta", "route": "gateway"}
    assert value(text, calls, **meta, tool="tool_invoke", outcome="ok") == 3
    assert value(text, calls, **meta, tool="tool_invoke", outcome="McpToolError") == 1
    assert value(text, calls, **meta, tool="tool_search", outcome="ok") == 1
    unknown = {"server": "unknown", "tool": "unknown", "route": "gateway"}
    assert value(text, calls, **unknown, outcome="ToolNotFound") == 1
    assert "mcp__nobody__nothing" not in text  # an unknown name is no label
    assert value(text, "pegboard_tool_searches_total") == 1
    assert value(text, "pegboard_tool_invokes_total", after_search="yes") == 3
    assert value(text, "pegboard_tool_invokes_total", after_search="no") == 1
    duration = "pegboard_tool_call_duration_seconds_count"
    assert value(text, duration, server="toolbox", route="tool_invoke") == 4
    assert value(text, "pegboard_upstream_up", server="toolbox") == 1
    assert value(text, "pegboard_cached_tools", server="bulk") == 32
    assert value(text, "pegboard_cached_tools", server="toolbox") >= 8
    requests = "pegboard_mcp_requests_total"
    assert value(text, requests, method="tools/call", era="handshake") == 6
    assert value(text, requests, method="initialize", era="handshake") == 2
    assert value(text, requests, method="other", era="handshake") == 0
    assert value(text, "pegboard_approvals_pending") == 0
    labels = set(re.findall(r"(\w+)=\"", text))
    assert labels == {"server", "tool", "route", "outcome", "after_search", "method", "era", "le"}
    assert "anonymous" not in text


def _record(tool: str, via: str, outcome: str, duration: float) -> CallRecord:
    return CallRecord(
        time=0.0,
        via=via,
        tool=tool,
        call_id="c",
        session_id="s",
        arguments_sha256="-",
        approval="not_required",
        outcome=outcome,
        duration=duration,
    )


def _samples(text: bytes, *names: str) -> list[str]:
    """The scrape's sample lines of these metrics, ``_created`` (a clock reading) left out."""
    return [
        line
        for line in text.decode().splitlines()
        if line.startswith(names) and "_created" not in line
    ]


async def test_held_tallies_scrape_as_prometheus_clients_own_counters_and_histogram(
    tmp_path: Path,
) -> None:
    """Events tallied without a lock, flushed at a scrape and every HELD durations, scrape as
    the same events fed straight into prometheus_client's counters and histogram."""
    path = tmp_path / "config.toml"
    config = {"data_dir": str(tmp_path / "data"), "servers": {"sdk": sdk_server()}}
    path.write_text(tomli_w.dumps(config), encoding="utf-8")
    reference = CollectorRegistry()
    calls = Counter(
        "pegboard_tool_calls", "-", ["server", "tool", "route", "outcome"], registry=reference
    )
    duration = Histogram(
        "pegboard_tool_call_duration_seconds", "-", ["server", "route"], registry=reference
    )
    requests = Counter("pegboard_mcp_requests", "-", ["method", "era"], registry=reference)
    names = ("pegboard_tool_calls", "pegboard_tool_call_duration_seconds", "pegboard_mcp_requests")
    with anyio.fail_after(60):
        async with open_runtime(path) as runtime:
            await runtime.catalog.refresh_tools("sdk")
            metrics = GatewayMetrics(Service.of(runtime), runtime.events)
            kinds = [
                ("mcp__sdk__add", "gateway", "ok", ("sdk", "mcp__sdk__add")),
                ("mcp__sdk__add", "tool_invoke", "McpToolError", ("sdk", "mcp__sdk__add")),
                ("tool_search", "gateway", "ok", ("meta", "tool_search")),
                ("mcp__gone__x", "gateway", "ToolNotFound", ("unknown", "unknown")),
            ]
            for rounds in (HELD + 7, 3, HELD * 2):  # a scrape after each
                for n in range(rounds):
                    tool, via, outcome, (server_id, known) = kinds[n % 4 if n % 3 else 0]
                    seconds = (n % 50) / 97
                    runtime.events.publish(CallFinished(_record(tool, via, outcome, seconds)))
                    calls.labels(server_id, known, via, outcome).inc()
                    duration.labels(server_id, via).observe(seconds)
                    method = ("tools/call", "ping", "made/up")[n % 3]
                    runtime.events.publish(McpRequestHandled(method, "handshake"))
                    requests.labels(method if n % 3 != 2 else "other", "handshake").inc()
                scraped = _samples(await metrics.exposition(), *names)
                expected = _samples(generate_latest(reference), *names)
                assert scraped == expected
                assert len(scraped) > 20
            metrics.close()

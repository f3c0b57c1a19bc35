"""``/metrics`` of a real ``pegboard serve --http`` after a scripted run of real MCP clients:
each counter and gauge has the value the run implies, and the labels stay bounded."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

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

"""Run in a subprocess by test_tracing: a gateway in this process, traced into the SDK's
in-memory exporter (a tracer provider is process-global), one gated and one upstream call by
an MCP client, in-process or (``http legacy``, ``http 2026-07-28``) over streamable HTTP on
127.0.0.1 (the HTTP fast path: :mod:`pegboard.gateway.http_fast`); prints the finished spans
as JSON lines, then the upstream's answer."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from pegboard.config import load_config
from pegboard.gateway.compose import gateway_for
from pegboard.gateway.server import Gateway
from pegboard.gateway.transports import bind_listening_socket, serve_http
from pegboard.runtime import ToolRuntime


@asynccontextmanager
async def client_of(gateway: Gateway, route: str) -> AsyncIterator[Client]:
    if route == "in-process":
        async with Client(gateway.server, mode="legacy") as client:
            yield client
        return
    mode = route.removeprefix("http ")
    sock = bind_listening_socket("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(serve_http, gateway, sock=sock))
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode) as client,  # type: ignore[arg-type]
        ):
            yield client
        tg.cancel_scope.cancel()


async def main(config: str, route: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    runtime = ToolRuntime(load_config(config))
    async with runtime.running():
        gateway, _ = gateway_for(runtime)
        async with client_of(gateway, route) as client:
            # the test cached the tools first (`pegboard servers refresh`): listed at once
            assert "mcp__traced__meta" in [t.name for t in (await client.list_tools()).tools]
            answer = await client.call_tool("mcp__traced__meta", {})
            refused = await client.call_tool("mcp__gated__meta", {})
    for finished in exporter.get_finished_spans():
        context = finished.get_span_context()
        parent = finished.parent
        print(
            json.dumps(
                {
                    "name": finished.name,
                    "trace": format(context.trace_id, "032x"),
                    "span": format(context.span_id, "016x"),
                    "parent": format(parent.span_id, "016x") if parent else None,
                    "attributes": dict(finished.attributes or {}),
                }
            )
        )
    print("ANSWER " + answer.content[0].text)  # type: ignore[union-attr]
    print("REFUSED " + refused.content[0].text)  # type: ignore[union-attr]


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "in-process")

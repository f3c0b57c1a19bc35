"""Run in a subprocess by test_tracing: a gateway in this process, traced into the SDK's
in-memory exporter (a tracer provider is process-global), one gated and one upstream call by
an in-process MCP client; prints the finished spans as JSON lines, then the upstream's answer."""

from __future__ import annotations

import json
import sys

import anyio
from mcp import Client
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from pegboard.config import load_config
from pegboard.gateway.compose import gateway_for
from pegboard.runtime import ToolRuntime


async def main(config: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    runtime = ToolRuntime(load_config(config))
    async with runtime.running():
        gateway, _ = gateway_for(runtime)
        async with Client(gateway.server, mode="legacy") as client:
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
    anyio.run(main, sys.argv[1])

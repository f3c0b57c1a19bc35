"""Traces: spans per request and per call (resolve, approval, upstream call), ``traceparent``
carried to the upstream in ``_meta``, the ``OTEL_*`` configuration, off and free by default.

The traced run is a subprocess (a tracer provider is process-global) with the OpenTelemetry
SDK's in-memory exporter; it prints the finished spans."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pegboard.errors import ConfigError
from pegboard.gateway.tracing import configure_from_env, wanted_exporters
from tests.gateway.harness import PEGBOARD, gateway_env, write_config

HERE = Path(__file__).resolve().parent
TRACED = {"command": sys.executable, "args": [str(HERE / "servers" / "traced.py")]}


@pytest.mark.parametrize("route", ["in-process", "http legacy", "http 2026-07-28"])
def test_a_traced_call_has_request_call_resolve_approval_and_upstream_spans(
    tmp_path: Path, route: str
) -> None:
    if importlib.util.find_spec("opentelemetry.sdk") is None:
        reason = "needs opentelemetry-sdk: pip install -e '.[dev]'"
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    config = {"servers": {"traced": TRACED, "gated": TRACED | {"force_prompt_tools": ["meta"]}}}
    write_config(tmp_path, config)
    env = gateway_env(tmp_path)
    subprocess.run([PEGBOARD, "servers", "refresh"], env=env, check=True, capture_output=True)
    run = subprocess.run(
        [sys.executable, str(HERE / "traced_run.py"), str(tmp_path / "config.toml"), route],
        env=env | {"PYTHONPATH": str(HERE.parents[1])},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    spans = [json.loads(line) for line in lines if line.startswith("{")]
    answer = next(line for line in lines if line.startswith("ANSWER ")).removeprefix("ANSWER ")
    by_name: dict[str, list[dict[str, Any]]] = {}
    for one in spans:
        by_name.setdefault(str(one["name"]), []).append(one)
    request = next(s for s in by_name["tools/call mcp__traced__meta"])
    call = _call_span(by_name, "mcp__traced__meta")
    assert call["parent"] == request["span"]
    assert call["trace"] == request["trace"]
    assert call["attributes"]["pegboard.outcome"] == "ok"
    resolve = [s for s in by_name["pegboard.resolve"] if s["trace"] == call["trace"]]
    approval = [s for s in by_name["pegboard.approval"] if s["trace"] == call["trace"]]
    upstream = [s for s in by_name["pegboard.upstream"] if s["trace"] == call["trace"]]
    assert len(resolve) == len(approval) == len(upstream) == 1
    assert approval[0]["attributes"]["pegboard.approval"] == "not_required"
    assert upstream[0]["attributes"]["pegboard.server"] == "traced"
    send = next(s for s in by_name["MCP send tools/call meta"] if s["trace"] == call["trace"])
    assert send["parent"] == upstream[0]["span"]
    # the upstream received the trace context of the SDK's client span
    traceparent = json.loads(answer)["traceparent"]
    assert traceparent.startswith(f"00-{send['trace']}-{send['span']}-")
    # the gated call's approval span says it was queued (nothing ran upstream)
    gated = _call_span(by_name, "mcp__gated__meta")
    assert gated["attributes"]["pegboard.outcome"] == "ApprovalQueued"
    assert not [s for s in by_name["pegboard.upstream"] if s["trace"] == gated["trace"]]


def _call_span(by_name: dict[str, list[dict[str, Any]]], tool: str) -> dict[str, Any]:
    return next(s for s in by_name["pegboard.call"] if s["attributes"]["gen_ai.tool.name"] == tool)


def test_tracing_is_off_unless_an_otel_variable_asks_for_it() -> None:
    assert wanted_exporters({}) == []
    assert wanted_exporters({"OTEL_SERVICE_NAME": "x"}) == []
    assert wanted_exporters({"OTEL_TRACES_EXPORTER": "none"}) == []
    assert wanted_exporters({"OTEL_TRACES_EXPORTER": "console,otlp"}) == ["console", "otlp"]
    assert wanted_exporters({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}) == ["otlp"]
    disabled = {"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}
    assert wanted_exporters(disabled) == []
    assert configure_from_env({}) is False
    with pytest.raises(ConfigError, match="pegboard knows otlp, console and none"):
        configure_from_env({"OTEL_TRACES_EXPORTER": "zipkin"})


def test_a_gateway_without_otel_variables_never_imports_the_sdk(tmp_path: Path) -> None:
    write_config(tmp_path, {"servers": {}})
    code = (
        "import sys, anyio\n"
        "from pegboard.config import load_config\n"
        "from pegboard.gateway.compose import gateway_for\n"
        "from pegboard.gateway.tracing import configure_from_env\n"
        "from pegboard.runtime import ToolRuntime\n"
        "from pegboard.core.tracing import tracing_on\n"
        "assert configure_from_env() is False\n"
        f"gateway_for(ToolRuntime(load_config({str(tmp_path / 'config.toml')!r})))\n"
        "print(tracing_on(), 'opentelemetry.sdk' in sys.modules)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], env=gateway_env(tmp_path), capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", "False"]

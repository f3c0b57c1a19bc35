"""Tracing of ``pegboard serve`` from the standard ``OTEL_*`` environment variables.

Off unless ``OTEL_TRACES_EXPORTER`` names an exporter (``otlp``, ``console``) or an OTLP
endpoint is set (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``);
``OTEL_SDK_DISABLED=true`` keeps it off. The SDK reads the rest itself (``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, the exporter's headers, sampling). Nothing is imported when off.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from pegboard.errors import ConfigError

logger = logging.getLogger("pegboard.gateway.tracing")

HINT = "pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http"


def wanted_exporters(env: Mapping[str, str]) -> list[str]:
    """The span exporters ``env`` asks for (empty: tracing stays off)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    named = [e.strip() for e in env.get("OTEL_TRACES_EXPORTER", "").split(",") if e.strip()]
    if named:
        return [] if named == ["none"] else named
    endpoints = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    return ["otlp"] if any(env.get(k) for k in endpoints) else []


def configure_from_env(env: Mapping[str, str] | None = None) -> bool:
    """Install a tracer provider with the exporters ``env`` (default: the process's
    environment) names; False when tracing stays off. A missing package or an unknown
    exporter is a :class:`ConfigError` naming the fix."""
    env = os.environ if env is None else env
    exporters = wanted_exporters(env)
    if not exporters:
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        raise ConfigError(
            f"OTEL_* variables ask for traces but the OpenTelemetry SDK is not installed: {HINT}"
        ) from None
    resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or "pegboard"})
    provider = TracerProvider(resource=resource)
    for name in exporters:
        if name == "console":
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        elif name == "otlp":
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                    OTLPSpanExporter,
                )
            except ImportError:
                raise ConfigError(
                    f"OTEL_TRACES_EXPORTER=otlp needs the OTLP exporter: {HINT}"
                ) from None
            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        else:
            raise ConfigError(f"OTEL_TRACES_EXPORTER={name}: pegboard knows otlp, console and none")
    trace.set_tracer_provider(provider)
    logger.info("tracing on: exporters %s", ", ".join(exporters))
    return True

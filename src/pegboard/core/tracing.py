"""OpenTelemetry spans of pegboard's call path, free when nobody traces.

:func:`span` is a no-op (no import, no allocation beyond the context manager) unless the
OpenTelemetry API is loaded and a real tracer provider is installed: by
:func:`pegboard.gateway.tracing.configure_from_env` from the standard ``OTEL_*`` variables, or by
an application that embeds pegboard and set up its own. Spans nest under the current one (the
MCP SDK's span of the request), and the SDK's client carries the current span to upstream
servers as ``traceparent`` in ``_meta``.
"""

from __future__ import annotations

import os
import sys
from contextlib import AbstractContextManager, nullcontext
from functools import cache
from typing import Any

TRACER = "pegboard"


_UNKNOWN = object()


@cache
def _provider_in_environment() -> bool:
    """Whether the environment names a tracer provider (read once per process)."""
    return "OTEL_PYTHON_TRACER_PROVIDER" in os.environ


def tracing_on() -> bool:
    """Whether spans are recorded: the OpenTelemetry API is imported and a real provider set.

    Asked several times per call: while no provider is set (the API's global is None) and the
    environment names none, the answer is no without the API's own look-up, whose
    ``os.environ`` miss raises and catches a KeyError (~10k instructions, 6% of a proxied
    call's). A provider set in code is seen at once; the environment is read once."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return False
    if getattr(trace, "_TRACER_PROVIDER", _UNKNOWN) is None and not _provider_in_environment():
        return False  # what get_tracer_provider() would say: its proxy, no spans
    provider = trace.get_tracer_provider()
    return not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


_OFF: AbstractContextManager[Any] = nullcontext()


def span(name: str, **attributes: Any) -> AbstractContextManager[Any]:
    """A span named ``name`` around the block (the ``with`` gets None when tracing is off:
    one shared null context, no generator); attributes whose value is None are left out."""
    if not tracing_on():
        return _OFF
    from opentelemetry import trace

    tracer = trace.get_tracer(TRACER)
    shown = {k: v for k, v in attributes.items() if v is not None}
    return tracer.start_as_current_span(name, attributes=shown)

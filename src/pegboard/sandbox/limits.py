"""The limits of one ``tool_exec`` run, and how each maps onto Monty.

Monty leaves most limits off unless told; :func:`monty_limits` sets every one of them on
every run, so a forgotten field can never mean "unlimited".

==================  =====================================================================
ExecLimits          enforced by
==================  =====================================================================
wall_seconds        the host: a cancel scope around the whole run, time inside tools too
cpu_seconds         Monty ``max_feed_duration_secs`` and ``max_turn_duration_secs`` (the
                    interpreter's own clock, stopped while a tool runs), backstopped by the
                    pool's ``request_timeout``, which kills a worker that stops answering
memory_bytes        Monty ``max_memory`` (heap, checked before an allocation is made)
recursion_depth     Monty ``max_recursion_depth``
max_tool_calls      the host (counted per call; the run is stopped past it, uncatchably),
                    backstopped by Monty ``max_suspensions``
max_parallel_calls  the host: a semaphore around tool calls (``gather`` of 200 calls must not
                    open 200 requests to one MCP server at once)
max_output_bytes    ``print``: captured by the host, the run stopped past it; the return
                    value: measured as JSON on the host, refused past it
sleep_seconds       Monty ``max_total_sleep_secs`` and the ``sleep_system_max`` OS policy
==================  =====================================================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from pegboard.errors import ConfigError

# Suspensions Monty may count per tool call (the call, a name lookup, a future resolution),
# plus slack for sleeps and imports: the host's exact count fires first.
_SUSPENSIONS_PER_CALL = 4
_SUSPENSION_SLACK = 64


@dataclass(frozen=True, slots=True)
class ExecLimits:
    """Bounds of one run. Every field is always applied; none can be switched off."""

    wall_seconds: float = 30.0
    cpu_seconds: float = 5.0
    memory_bytes: int = 64 * 1024 * 1024
    recursion_depth: int = 200
    max_tool_calls: int = 200
    max_parallel_calls: int = 8
    max_output_bytes: int = 64 * 1024
    sleep_seconds: float = 5.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"ExecLimits.{f.name} must be a number, got {value!r}.")
            if not math.isfinite(value) or value <= 0:
                raise ConfigError(
                    f"ExecLimits.{f.name} must be a positive finite number, got {value!r}; "
                    "every sandbox limit is always on."
                )


def monty_limits(limits: ExecLimits) -> dict[str, Any]:
    """The Monty ``ResourceLimits`` of one run: every key set, none left at Monty's default."""
    return {
        "max_feed_duration_secs": limits.cpu_seconds,
        "max_turn_duration_secs": limits.cpu_seconds,
        "max_memory": limits.memory_bytes,
        "max_recursion_depth": limits.recursion_depth,
        "max_suspensions": limits.max_tool_calls * _SUSPENSIONS_PER_CALL + _SUSPENSION_SLACK,
        "max_total_sleep_secs": limits.sleep_seconds,
        "gc_interval": 10_000,
    }


def monty_os_policy(limits: ExecLimits) -> dict[str, Any]:
    """Clock and sleep policy: real clock, each sleep capped, CPU time not observable."""
    return {
        "sleep": "system",
        "sleep_system_max": limits.sleep_seconds,
        "process_time": "zero",
    }

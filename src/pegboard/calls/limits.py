"""Rate limits per principal: ``[limits] calls_per_minute`` (and per tool), token buckets.

A bucket holds up to N calls and refills at N per minute, so a burst of N passes and then one
call every 60/N s. A limited call is refused at once with the time after which it would pass
(never queued, never a hang). :class:`MemoryRateLimiter` serves one process; a team store
shares buckets across replicas through the same :class:`RateLimiter` protocol.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import anyio

from pegboard.errors import RateLimited


@dataclass(frozen=True)
class Limit:
    """``per_minute`` calls of one principal, for one tool (``tool``) or all of them (None)."""

    per_minute: int
    tool: str | None = None


class RateLimiter(Protocol):
    async def take(self, key: str, limit: Limit) -> float | None:
        """Take one call from ``key``'s bucket: None when it passes, else the seconds after
        which it would."""
        ...


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class MemoryRateLimiter:
    """Token buckets in this process's memory (a gateway without a team store)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[tuple[str, str | None], _Bucket] = {}
        self._lock = anyio.Lock()

    async def take(self, key: str, limit: Limit) -> float | None:
        async with self._lock:
            now = self._clock()
            rate = limit.per_minute / 60.0
            bucket = self._buckets.get((key, limit.tool))
            if bucket is None:
                bucket = self._buckets[(key, limit.tool)] = _Bucket(limit.per_minute, now)
            bucket.tokens = min(limit.per_minute, bucket.tokens + (now - bucket.stamp) * rate)
            bucket.stamp = now
            if bucket.tokens >= 1:
                bucket.tokens -= 1
                return None
            return (1 - bucket.tokens) / rate


@dataclass(frozen=True)
class Limits:
    """The configured limits: one for every call, and one per tool wire name."""

    calls_per_minute: int | None = None
    per_tool: Mapping[str, int] | None = None

    def applying_to(self, tool: str) -> list[Limit]:
        limits = []
        if self.calls_per_minute is not None:
            limits.append(Limit(self.calls_per_minute))
        if self.per_tool and tool in self.per_tool:
            limits.append(Limit(self.per_tool[tool], tool))
        return limits

    @property
    def off(self) -> bool:
        return self.calls_per_minute is None and not self.per_tool


@dataclass(frozen=True)
class CallLimits:
    """The configured limits and the buckets they take from (a runtime's, shared by all its
    sessions: the buckets are keyed by principal)."""

    limits: Limits
    limiter: RateLimiter

    @classmethod
    def configured(cls, limits: Limits, limiter: RateLimiter | None = None) -> CallLimits | None:
        """None when ``limits`` are off (no call pays for a check)."""
        if limits.off:
            return None
        return cls(limits, limiter if limiter is not None else MemoryRateLimiter())

    async def check(self, principal: str, tool: str) -> None:
        """Take this call of ``tool`` by ``principal`` from its buckets, or raise
        :class:`~pegboard.errors.RateLimited` (the model reads when to retry)."""
        for limit in self.limits.applying_to(tool):
            wait = await self.limiter.take(principal, limit)
            if wait is not None:
                retry = max(1, math.ceil(wait))
                raise RateLimited(
                    limit_message(limit, tool, retry), tool_name=tool, retry_after=retry
                )


def limit_message(limit: Limit, tool: str, retry: int) -> str:
    scope = f"calls of {tool}" if limit.tool else "tool calls"
    return f"rate limit reached: {limit.per_minute} {scope} per minute; retry after {retry} s"

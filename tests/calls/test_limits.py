"""Token buckets per principal: a burst passes, the next call is told when to retry."""

from __future__ import annotations

import pytest

from pegboard.calls.limits import CallLimits, Limits, MemoryRateLimiter
from pegboard.errors import RateLimited

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def refusal(limits: CallLimits, who: str, tool: str) -> str | None:
    try:
        await limits.check(who, tool)
    except RateLimited as exc:
        return str(exc)
    return None


def limited(limits: Limits, clock: Clock | None = None) -> CallLimits:
    made = CallLimits.configured(limits, MemoryRateLimiter(clock or Clock()))
    assert made is not None
    return made


async def test_a_burst_of_n_passes_then_the_call_is_told_when_to_retry() -> None:
    clock = Clock()
    limits = limited(Limits(calls_per_minute=3), clock)
    assert [await refusal(limits, "alice", "t") for _ in range(3)] == [None] * 3
    assert await refusal(limits, "alice", "t") == (
        "rate limit reached: 3 tool calls per minute; retry after 20 s"
    )
    clock.now += 19.5
    assert await refusal(limits, "alice", "t") == (
        "rate limit reached: 3 tool calls per minute; retry after 1 s"
    )
    clock.now += 0.5
    assert await refusal(limits, "alice", "t") is None


async def test_one_principal_at_its_limit_spares_the_others() -> None:
    limits = limited(Limits(calls_per_minute=1))
    assert await refusal(limits, "alice", "t") is None
    assert await refusal(limits, "alice", "t") is not None
    assert await refusal(limits, "bob", "t") is None


async def test_a_per_tool_limit_counts_only_that_tool() -> None:
    limits = limited(Limits(per_tool={"mcp__gh__search": 2}))
    for _ in range(2):
        assert await refusal(limits, "alice", "mcp__gh__search") is None
    assert await refusal(limits, "alice", "mcp__gh__search") == (
        "rate limit reached: 2 calls of mcp__gh__search per minute; retry after 30 s"
    )
    for _ in range(10):
        assert await refusal(limits, "alice", "mcp__time__now") is None


async def test_no_limits_configured_is_off() -> None:
    assert Limits().off
    assert not Limits(calls_per_minute=5).off
    assert CallLimits.configured(Limits()) is None

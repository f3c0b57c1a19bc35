"""Token buckets per principal: a burst passes, the next call is told when to retry; in memory
and in a real PostgreSQL database (tests/pg/cluster.py), where replicas share the buckets."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from pegboard.calls.limits import CallLimits, Limits, MemoryRateLimiter, RateLimiter
from pegboard.calls.limits_pg import PostgresRateLimiter
from pegboard.errors import RateLimited

pytestmark = pytest.mark.anyio

LimiterMaker = Callable[[Callable[[], float]], RateLimiter]


@pytest.fixture(params=["memory", "postgres"])
def make_limiter(request: pytest.FixtureRequest) -> Iterator[LimiterMaker]:
    """Makes a limiter on ``clock``; with PostgreSQL each one made is another replica of the
    same database."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else ""
    opened: list[PostgresRateLimiter] = []

    def make(clock: Callable[[], float]) -> RateLimiter:
        if not url:
            return MemoryRateLimiter(clock)
        limiter = PostgresRateLimiter(url, clock)
        opened.append(limiter)
        return limiter

    yield make
    for limiter in opened:
        limiter.close()


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


def limited(make: LimiterMaker, limits: Limits, clock: Clock | None = None) -> CallLimits:
    made = CallLimits.configured(limits, make(clock or Clock()))
    assert made is not None
    return made


async def test_a_burst_of_n_passes_then_the_call_is_told_when_to_retry(
    make_limiter: LimiterMaker,
) -> None:
    clock = Clock()
    limits = limited(make_limiter, Limits(calls_per_minute=3), clock)
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


async def test_one_principal_at_its_limit_spares_the_others(make_limiter: LimiterMaker) -> None:
    limits = limited(make_limiter, Limits(calls_per_minute=1))
    assert await refusal(limits, "alice", "t") is None
    assert await refusal(limits, "alice", "t") is not None
    assert await refusal(limits, "bob", "t") is None


async def test_a_per_tool_limit_counts_only_that_tool(make_limiter: LimiterMaker) -> None:
    limits = limited(make_limiter, Limits(per_tool={"mcp__gh__search": 2}))
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


async def test_replicas_on_one_team_store_take_from_the_same_bucket(pg_url: str) -> None:
    """Three replicas, a limit of 4 per minute: 4 calls pass in all, wherever they land,
    and racing takes never both get the last token."""
    import anyio

    clock = Clock()
    replicas = [PostgresRateLimiter(pg_url, clock) for _ in range(3)]
    try:
        shared = [limited(lambda c, r=r: r, Limits(calls_per_minute=4), clock) for r in replicas]
        outcomes: list[str | None] = []

        async def call(limits: CallLimits) -> None:
            outcomes.append(await refusal(limits, "alice", "t"))

        async with anyio.create_task_group() as tg:
            for i in range(9):
                tg.start_soon(call, shared[i % 3])
        assert outcomes.count(None) == 4
        assert await refusal(shared[0], "bob", "t") is None  # another principal's bucket
        clock.now += 15  # one token back, for whichever replica asks first
        assert [await refusal(s, "alice", "t") for s in shared].count(None) == 1
    finally:
        for replica in replicas:
            replica.close()

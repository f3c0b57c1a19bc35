"""The :class:`~pegboard.calls.limits.RateLimiter` in the team store's PostgreSQL database.

Every replica takes from the same buckets, so ``[limits] calls_per_minute`` holds for a
principal however a balancer spreads its calls. One statement per take: the bucket is
refilled, tested and decremented under the row's lock (``INSERT ... ON CONFLICT DO UPDATE``),
so racing replicas never both take the last call. Refill uses the caller's clock (wall time:
replicas on one database compare times, so their clocks should be synchronised, as for the
grants' expiry).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread

from pegboard.calls.limits import Limit
from pegboard.errors import StoreError
from pegboard.postgres import Database

# tokens before this take: the stored count refilled at ``rate`` per second since ``stamp``,
# capped at the bucket's size
_REFILLED = "least(%(cap)s, b.tokens + (%(now)s - b.stamp) * %(rate)s)"
_TAKE = f"""
INSERT INTO pegboard.rate_buckets AS b (key, tool, tokens, stamp, passed)
VALUES (%(key)s, %(tool)s, %(cap)s - 1, %(now)s, true)
ON CONFLICT (key, tool) DO UPDATE SET
    tokens = CASE WHEN {_REFILLED} >= 1 THEN {_REFILLED} - 1 ELSE {_REFILLED} END,
    stamp = %(now)s,
    passed = {_REFILLED} >= 1
RETURNING passed, tokens
"""


class PostgresRateLimiter:
    """Token buckets shared by every replica on the team store (see the module docstring)."""

    def __init__(self, database: Database | str, clock: Callable[[], float] = time.time) -> None:
        if isinstance(database, str):
            database = Database(database)
        self.db = database.acquire()
        self._clock = clock
        self._closed = False

    def _take(self, params: dict[str, Any]) -> tuple[bool, float]:
        with self.db.connection("take a rate-limit token from", StoreError) as conn:
            row = conn.execute(_TAKE, params).fetchone()
        assert row is not None
        return bool(row[0]), float(row[1])

    async def take(self, key: str, limit: Limit) -> float | None:
        rate = limit.per_minute / 60.0
        params = {
            "key": key,
            "tool": limit.tool or "",
            "cap": float(limit.per_minute),
            "now": self._clock(),
            "rate": rate,
        }
        passed, tokens = await anyio.to_thread.run_sync(self._take, params)
        return None if passed else (1 - tokens) / rate

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.db.release()

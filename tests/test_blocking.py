"""The blocked-loop detector (tests/blocking.py) catches a loop that stops turning."""

from __future__ import annotations

import time

import anyio
import pytest

from tests import blocking

pytestmark = pytest.mark.anyio


async def test_a_synchronous_sleep_on_the_loop_is_reported_with_its_stack() -> None:
    async with blocking.watch_the_loop(threshold=0.2) as seen:
        time.sleep(0.6)  # the block under test  # noqa: ASYNC251

    assert seen.longest > 0.2
    assert "time.sleep(0.6)" in seen.stack
    assert "blocked for" in blocking.report(seen)


async def test_waiting_without_blocking_is_not_reported() -> None:
    async with blocking.watch_the_loop(threshold=0.2) as seen:
        await anyio.sleep(0.6)
        await anyio.to_thread.run_sync(time.sleep, 0.6)

    assert seen.longest == 0.0


async def test_a_cpu_bound_loop_on_the_event_loop_is_reported() -> None:
    async with blocking.watch_the_loop(threshold=0.2) as seen:
        deadline = time.monotonic() + 0.8
        while time.monotonic() < deadline:  # computing, never yielding
            pass

    assert seen.longest > 0.2
    assert "while time.monotonic() < deadline" in seen.stack

"""A test-time detector of a blocked event loop: a test whose loop stops turning for longer
than :data:`THRESHOLD` fails, naming where the loop thread was stuck.

A heartbeat task on the test's loop ticks every :data:`TICK` seconds; a watchdog thread
checks the last tick and, when it is older than the threshold, takes the loop thread's stack
(the blocking call: a ``time.sleep``, a synchronous file lock, a CPU-bound loop). The
threshold is generous (CPU starvation on a loaded 2-core machine is not a block) and set by
``PEGBOARD_BLOCKING_THRESHOLD`` (seconds; 0 turns the detector off).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

THRESHOLD = float(os.environ.get("PEGBOARD_BLOCKING_THRESHOLD", "2.0"))
TICK = 0.05


@dataclass
class Blocked:
    """What the watchdog saw: the longest stall and the loop thread's stack during it."""

    longest: float = 0.0
    stack: str = ""
    beat: float = field(default_factory=time.monotonic)


@asynccontextmanager
async def watch_the_loop(threshold: float = THRESHOLD) -> AsyncIterator[Blocked]:
    """Watch the running loop while the body runs; the result says if (and where) it stalled."""
    seen = Blocked()
    loop_thread = threading.get_ident()
    stop = threading.Event()

    def watchdog() -> None:
        while not stop.wait(TICK):
            stalled = time.monotonic() - seen.beat
            if stalled > threshold and stalled > seen.longest:
                seen.longest = stalled
                frame = sys._current_frames().get(loop_thread)
                seen.stack = "".join(traceback.format_stack(frame)) if frame else ""

    async def heartbeat() -> None:
        while True:
            seen.beat = time.monotonic()
            await anyio.sleep(TICK)

    thread = threading.Thread(target=watchdog, name="loop-watchdog", daemon=True)
    thread.start()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(heartbeat)
            try:
                yield seen
            finally:
                tg.cancel_scope.cancel()
    finally:
        stop.set()
        thread.join(5)


def report(seen: Blocked) -> str:
    return (
        f"the event loop was blocked for {seen.longest:.1f} s (threshold {THRESHOLD} s); "
        f"the loop thread was at:\n{seen.stack}"
    )

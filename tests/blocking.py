"""A test-time detector of a blocked event loop: a test whose loop stops turning for longer
than :data:`THRESHOLD` fails, naming where the loop thread was stuck.

A heartbeat task on the test's loop ticks every :data:`TICK` seconds; a watchdog thread
checks the last tick and, when it is older than the threshold, takes the loop thread's stack
(the blocking call: a ``time.sleep``, a synchronous file lock, a CPU-bound loop). A stall
counts only when the loop thread spent it computing or waiting in a call other than the
loop's own poll: a thread that merely got no CPU on a loaded 2-core machine blocked nothing
(its state and CPU time come from ``/proc``). The threshold is set by
``PEGBOARD_BLOCKING_THRESHOLD`` (seconds, default 10; 0 turns the detector off).
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
from pathlib import Path

import anyio

# 10 s by default: at 2 s the suite shows real blocks that are not fixed yet (the search
# index embedding a deferred pool on the loop while listing, 2.6-5.5 s on a loaded machine);
# PEGBOARD_BLOCKING_THRESHOLD=2 lists them.
THRESHOLD = float(os.environ.get("PEGBOARD_BLOCKING_THRESHOLD", "10.0"))
TICK = 0.05


@dataclass
class Blocked:
    """What the watchdog saw: the longest stall and the loop thread's stack during it."""

    longest: float = 0.0
    stack: str = ""
    beat: float = field(default_factory=time.monotonic)
    beat_cpu: float = field(default_factory=time.thread_time)


def _thread_state(native_id: int) -> tuple[str, float] | None:
    """The thread's scheduler state (R running, S/D waiting in a call) and CPU seconds."""
    try:
        stat = Path(f"/proc/self/task/{native_id}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _is_block(stalled: float, threshold: float, native_id: int, seen: Blocked, top: str) -> bool:
    """A stall is a block when the loop thread spent it computing (CPU-bound) or waiting in
    a call that is not the loop's own poll (a sleep, a lock, a blocking read). A thread that
    was runnable but got no CPU (a loaded machine) did not block anything itself."""
    state = _thread_state(native_id)
    if state is None:
        return True  # no /proc: every stall counts
    status, cpu = state
    if cpu - seen.beat_cpu >= threshold / 2:
        return True
    return status in ("S", "D") and "selectors.py" not in top


@asynccontextmanager
async def watch_the_loop(threshold: float = THRESHOLD) -> AsyncIterator[Blocked]:
    """Watch the running loop while the body runs; the result says if (and where) it stalled."""
    seen = Blocked()
    loop_thread, native_id = threading.get_ident(), threading.get_native_id()
    stop = threading.Event()

    def watchdog() -> None:
        while not stop.wait(TICK):
            stalled = time.monotonic() - seen.beat
            if stalled <= threshold or stalled <= seen.longest:
                continue
            frame = sys._current_frames().get(loop_thread)
            stack = traceback.format_stack(frame) if frame else []
            if _is_block(stalled, threshold, native_id, seen, stack[-1] if stack else ""):
                seen.longest, seen.stack = stalled, "".join(stack)

    async def heartbeat() -> None:
        while True:
            seen.beat, seen.beat_cpu = time.monotonic(), time.thread_time()
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

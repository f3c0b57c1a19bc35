"""Handing the heap freed by a burst of work back to the system, in a long-lived process.

A start of ``pegboard serve`` reads the catalog (every definition as JSON, then as objects),
lists each upstream again and readies the search index: many short-lived allocations between
the long-lived ones. glibc's malloc keeps the freed pages of its heap and arenas for reuse, so
the serving process stays as large as its busiest moment (about 50 MB of free heap at 4,800
tools). :class:`HeapTrimmer` calls ``malloc_trim(0)`` (glibc's own call: free pages inside the
heap are returned with ``madvise``, nothing in use moves) a moment after the last burst, in a
thread of its own (the call releases the GIL; 10-40 ms at 4,800 tools), so the resident size
is what the process holds. Elsewhere (macOS, Windows, musl) it does nothing.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from functools import cache

logger = logging.getLogger("pegboard.memory")

TRIM_DELAY_S = 0.05


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # lazy: only a serving process trims

    try:
        trim = ctypes.CDLL(None).malloc_trim  # the C library this interpreter runs on
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_free_heap() -> bool:
    """Return the heap's free pages to the system now; False where there is no such call."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)  # a ctypes call: the GIL is released meanwhile
    return True


_INSTALLED: list[HeapTrimmer] = []


def after_burst() -> None:
    """Say a burst of work ended (a listing, an index load): the installed trimmer (``pegboard
    serve``'s) trims soon; without one (a CLI command, a library user) nothing happens."""
    if _INSTALLED:
        _INSTALLED[-1].soon()


class HeapTrimmer:
    """:func:`release_free_heap` once, :data:`TRIM_DELAY_S` after the last :meth:`soon`.

    Call :meth:`soon` after each burst (a catalog load, a listing, an index load); bursts in a
    row are trimmed once, after the last. Safe from any thread.
    """

    def __init__(self, delay: float = TRIM_DELAY_S) -> None:
        self.delay = delay
        self.trims = 0  # how many trims ran (for tests and the debug log)
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._closed = False

    def soon(self, *_event: object) -> None:
        """Trim :attr:`delay` seconds from now, unless another call comes first (it waits
        again). Takes and ignores an event, so it can subscribe to an event bus as it is."""
        with self._lock:
            if self._closed:
                return
            if self._timer is not None:
                self._timer.cancel()
            timer = threading.Timer(self.delay, self._trim)
            timer.name, timer.daemon = "heap-trim", True
            self._timer = timer
            timer.start()

    def _trim(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._timer = None
        if release_free_heap():
            self.trims += 1
            logger.debug("gave the free heap back to the system (trim %d)", self.trims)

    def install(self) -> None:
        """Make this the trimmer :func:`after_burst` reaches (until :meth:`close`)."""
        _INSTALLED.append(self)

    def close(self) -> None:
        """Cancel a pending trim and uninstall; later :meth:`soon` calls do nothing."""
        if self in _INSTALLED:
            _INSTALLED.remove(self)
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

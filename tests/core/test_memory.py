"""The heap trim of a serving process (pegboard.core.memory): glibc's real malloc_trim."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from pegboard.core.memory import HeapTrimmer, after_burst, release_free_heap

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")


def _wait_for(predicate: object, bound: float = 5.0) -> None:
    deadline = time.monotonic() + bound
    while not predicate() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)


@linux
def test_the_c_librarys_trim_is_called() -> None:
    garbage = [bytes(1000) for _ in range(20_000)]  # 20 MB freed below: something to give back
    del garbage
    assert release_free_heap() is True


@linux
def test_bursts_in_a_row_are_trimmed_once_after_the_last() -> None:
    trimmer = HeapTrimmer(delay=0.2)
    trimmer.install()
    try:
        for _ in range(5):
            after_burst()
            time.sleep(0.02)
        assert trimmer.trims == 0  # still inside the delay of the last burst
        _wait_for(lambda: trimmer.trims > 0)
        time.sleep(0.3)
        assert trimmer.trims == 1
    finally:
        trimmer.close()


def test_without_an_installed_trimmer_a_burst_starts_nothing() -> None:
    before = threading.active_count()
    after_burst()
    assert not any(t.name == "heap-trim" for t in threading.enumerate())
    assert threading.active_count() == before


@linux
def test_a_closed_trimmer_no_longer_trims() -> None:
    trimmer = HeapTrimmer(delay=0.05)
    trimmer.install()
    trimmer.soon()
    trimmer.close()
    after_burst()
    trimmer.soon()
    time.sleep(0.3)
    assert trimmer.trims == 0

"""numpy's BLAS gets one thread in ``pegboard serve`` unless the user chose a count: its
helper threads split a search's one matrix-vector product and spin between products."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pegboard.search.threads import one_blas_thread


def test_one_thread_is_asked_for_when_no_count_is_set() -> None:
    environ = {"PATH": "/bin"}
    one_blas_thread(environ)
    assert environ == {"PATH": "/bin", "OPENBLAS_NUM_THREADS": "1"}


@pytest.mark.parametrize("name", ["OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"])
def test_a_count_the_user_set_is_kept(name: str) -> None:
    environ = {name: "4"}
    one_blas_thread(environ)
    assert environ == {name: "4"}


PROBE = """
import os, sys
sys.path[:0] = {paths!r}
from pegboard.search.threads import one_blas_thread
if {ask}:
    one_blas_thread()
import numpy
print(len(os.listdir("/proc/self/task")))
"""


def _threads_after_numpy(ask: bool, env: dict[str, str]) -> int:
    code = PROBE.format(paths=sys.path, ask=ask)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return int(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc")
def test_numpy_loaded_after_it_starts_no_blas_thread() -> None:
    base = {"PATH": "/usr/bin:/bin"}
    assert _threads_after_numpy(True, base) == 1
    # The same probe with two asked for: the count is what OpenBLAS reads at load.
    assert _threads_after_numpy(False, base | {"OPENBLAS_NUM_THREADS": "2"}) == 2

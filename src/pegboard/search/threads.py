"""One BLAS thread for the products a search makes (stdlib only: used before numpy loads).

numpy's OpenBLAS starts a thread per core when it loads and splits every matrix product
among them. A search multiplies the stored vectors by one query vector (5,000 x 256 float32
at 5,000 tools): 0.08 ms on one core, 0.56 ms split over two; and the helper threads spin
between products, so ``pegboard serve`` spent 7-12 ms of CPU per ``tool_search`` on 2 cores
against 2-3 ms with one thread (``kb_search``'s product over 97,800 chunks: 12.7 ms on one
core, 17.0 on two). OpenBLAS reads its thread count from the environment when it loads, so
this must run before numpy is imported; a count the user set is kept, and pegboard's stdio
children never see the variable (:data:`pegboard.mcp.spawn.ENV_ALLOWLIST`).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

#: OpenBLAS's own variable, then the ones it falls back to, in its order.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def one_blas_thread(environ: MutableMapping[str, str] = os.environ) -> None:
    """Ask numpy's BLAS for one thread, unless a thread count is already set."""
    if not any(environ.get(name) for name in THREAD_VARIABLES):
        environ["OPENBLAS_NUM_THREADS"] = "1"

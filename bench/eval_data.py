"""Where the public tool-search datasets are: ``PEGBOARD_EVAL_DIR`` if set, else the first
``shared/eval`` above this checkout (a clone at ``/work/main`` and a worktree at
``/work/wt/NAME`` both find ``/work/shared/eval``)."""

from __future__ import annotations

import os
from pathlib import Path


def _find() -> Path:
    named = os.environ.get("PEGBOARD_EVAL_DIR")
    if named:
        return Path(named)
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "shared" / "eval").is_dir():
            return parent / "shared" / "eval"
    return here.parents[2] / "shared" / "eval"  # named in the error of whoever opens it


EVAL_DIR = _find()

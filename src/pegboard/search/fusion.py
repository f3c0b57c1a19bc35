"""Turning score arrays into ordered hits, and merging the rankings of several queries."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
else:  # numpy loads on first use: a small stored index is ranked without it (search.flat)
    from pegboard._lazy import LazyModule

    np = LazyModule("numpy")


# top_slots first sorts only about this many times ``limit`` of the best-scored slots.
PREFILTER = 4


def top_slots(
    scores: npt.NDArray[np.float64],
    names: Sequence[str | None],
    limit: int,
    keep: Callable[[str], bool] | None = None,
) -> list[tuple[str, float]]:
    """The ``limit`` best positive-scored names that ``keep`` accepts, ties broken by name.

    Candidates are visited best first and collection stops only after the tie group at the
    cut-off is complete, so the name order of equal scores never depends on array layout. When
    nearly every slot scores (a dense signal), only the slots at or above the score of the
    ``PREFILTER * limit``-th best are sorted first; that head holds the answer whenever it
    yields ``limit`` accepted names, since every slot outside it scores strictly lower.
    """
    candidates = np.flatnonzero(scores > 0)
    head_size = PREFILTER * max(limit, 1)
    if len(candidates) > 2 * head_size:
        values = scores[candidates]
        cut = np.partition(values, len(values) - head_size)[len(values) - head_size]
        picked = _collect(scores, candidates[values >= cut], names, limit, keep)
        if len(picked) >= limit:
            return picked
    return _collect(scores, candidates, names, limit, keep)


def _collect(
    scores: npt.NDArray[np.float64],
    candidates: npt.NDArray[np.int64],
    names: Sequence[str | None],
    limit: int,
    keep: Callable[[str], bool] | None,
) -> list[tuple[str, float]]:
    order = candidates[np.argsort(-scores[candidates], kind="stable")]
    picked: list[tuple[str, float]] = []
    for slot in order.tolist():
        score = float(scores[slot])
        if len(picked) >= limit and score < picked[-1][1]:
            break
        name = names[slot]
        if name is not None and (keep is None or keep(name)):
            picked.append((name, score))
    picked.sort(key=lambda item: (-item[1], item[0]))
    return picked[:limit]


def interleave(rankings: Sequence[Sequence[str]], limit: int) -> list[tuple[str, float]]:
    """The rankings of several queries merged round by round: each query's best first (in
    query order), then each one's second, and so on; a name found by several queries keeps
    its first place. The score is ``1 / round``.

    Each query of a multi-query search usually names a different need (the steps of a task)
    or the same need in other words: interleaving gives every need its best tools in the first
    places. Reciprocal-rank fusion, measured against it on livemcpbench's tasks searched step by
    step, lifted tools that several steps rank lowly above each step's best (hit@5 0.606 vs
    0.862; bench/search_steps.py).
    """
    picked: dict[str, float] = {}
    for depth in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if depth < len(ranking) and ranking[depth] not in picked:
                picked[ranking[depth]] = 1.0 / (depth + 1)
                if len(picked) == limit:
                    return list(picked.items())
    return list(picked.items())

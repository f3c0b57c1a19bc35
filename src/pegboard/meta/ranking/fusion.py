"""Turning score arrays into ordered hits, and reciprocal-rank fusion of rankings."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

RRF_K = 60.0
# top_slots first sorts only about this many times ``limit`` of the best-scored slots.
PREFILTER = 4


def top(scores: Mapping[str, float], limit: int) -> list[tuple[str, float]]:
    """The ``limit`` best (name, score) pairs, ties broken by name."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]


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


def rrf(
    rankings: Sequence[Sequence[str]],
    weights: Sequence[float] | None = None,
    k: float = RRF_K,
) -> dict[str, float]:
    """Sum of ``weight / (k + rank)`` over the rankings each name appears in (rank from 1)."""
    fused: dict[str, float] = {}
    for i, ranking in enumerate(rankings):
        weight = weights[i] if weights is not None else 1.0
        for rank, name in enumerate(ranking, start=1):
            fused[name] = fused.get(name, 0.0) + weight / (k + rank)
    return fused

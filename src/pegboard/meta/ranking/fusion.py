"""Turning score arrays into ordered hits, and reciprocal-rank fusion of rankings."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

RRF_K = 60.0


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
    cut-off is complete, so the name order of equal scores never depends on array layout.
    """
    candidates = np.flatnonzero(scores > 0)
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

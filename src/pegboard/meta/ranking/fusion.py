"""Reciprocal-rank fusion: merge rankings whose scores are not comparable."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

RRF_K = 60.0


def top(scores: Mapping[str, float], limit: int) -> list[tuple[str, float]]:
    """The ``limit`` best (name, score) pairs, ties broken by name."""
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return ordered[:limit] if limit >= 0 else ordered


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

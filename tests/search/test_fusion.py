"""``top_slots``: the head-only sort must give exactly what a full sort gives."""

from __future__ import annotations

import random

import numpy as np

from pegboard.search.fusion import top_slots


def brute(
    scores: list[float], names: list[str | None], limit: int, keep: set[str] | None
) -> list[tuple[str, float]]:
    rows = [
        (n, s)
        for n, s in zip(names, scores, strict=True)
        if n is not None and s > 0 and (keep is None or n in keep)
    ]
    return sorted(rows, key=lambda r: (-r[1], r[0]))[:limit]


def test_top_slots_matches_a_full_sort_with_ties_filters_and_free_slots() -> None:
    rng = random.Random(7)
    for _ in range(200):
        size = rng.randrange(1, 400)
        # Few distinct values: ties everywhere, including across the head's cut-off.
        scores = [rng.choice([0.0, 0.1, 0.2, 0.3, 0.5, 0.9]) for _ in range(size)]
        names: list[str | None] = [None if rng.random() < 0.1 else f"t{i:03d}" for i in range(size)]
        limit = rng.choice([1, 3, 8, 20])
        keep = None if rng.random() < 0.5 else {n for n in names if n and rng.random() < 0.2}
        got = top_slots(np.array(scores), names, limit, None if keep is None else keep.__contains__)
        assert got == brute(scores, names, limit, keep)


def test_top_slots_breaks_ties_by_name_when_every_slot_scores_the_same() -> None:
    names: list[str | None] = [f"tool{i:04d}" for i in range(999, -1, -1)]
    got = top_slots(np.full(1000, 0.5), names, 3)
    assert got == [("tool0000", 0.5), ("tool0001", 0.5), ("tool0002", 0.5)]

"""Scoring a small stored index in plain Python, so that ranking it never imports numpy.

:func:`~pegboard.search.index.rank` scores a stored index of at most :data:`FLAT_TOOLS` tools
here: the same BM25F sums (float64 both ways, the same numbers), the same namespace boost, each
dense signal's cosine against the stored float32 vectors and its z-score over the live slots.
numpy's import (about 90 ms of CPU) and its libraries (about 12 MB of a process's memory, 6 of
them mapped library pages) are what a one-shot ``pegboard tools search`` and an idle
``pegboard serve`` of a few hundred tools save; the price is the cosines in Python, about 8 ms
per query at 527 tools where numpy takes about 1 ms. The dense parts differ from numpy's in
the last bits only (float64 sums here, float32 matrix products there): the rankings of
``bench/search.py``'s dev sets are compared in ``bench/flat_rank.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pegboard.search.text import tokenize

if TYPE_CHECKING:
    from pegboard.search.index import DenseSignal, FusionParams
    from pegboard.search.stored import LoadedState
    from pegboard.search.tables import Table

# Stored indexes of at most this many tools are ranked here (numpy's above).
FLAT_TOOLS = 1000


def scores(
    state: LoadedState, signals: Sequence[DenseSignal], fusion: FusionParams, query: str
) -> list[float] | None:
    """:func:`pegboard.search.index._scores` of ``state`` without numpy."""
    from pegboard.search.index import idf_weight

    terms = tokenize(query)
    total = [0.0] * len(state.lexical.names)
    if terms:
        lexical = _unit_max(list(state.lexical.score(terms)))  # a list: the index is small
        total = [t + s for t, s in zip(total, lexical, strict=True)]
        if fusion.namespace_weight and len(state.space_of):
            spaces = [*_unit_max(list(state.spaces.score(terms))), 0.0]
            boost = fusion.namespace_weight
            total = [
                t * (1.0 + boost * spaces[space])
                for t, space in zip(total, state.space_of, strict=True)
            ]
    dense = False
    if signals and len(state.space_of):
        weight = idf_weight(state.lexical)
        live = [space >= 0 for space in state.space_of]
        for signal, table in zip(signals, state.tables, strict=True):
            vector = signal.embedder.query_vector(query, weight)
            if any(vector):
                dense = True
                cosine = _dots(table, vector)
                z = _positive_z(cosine, live)
                total = [t + signal.weight * v for t, v in zip(total, z, strict=True)]
    return total if terms or dense else None


def _dots(table: Table, vector: Sequence[float]) -> list[float]:
    """Each row's dot product with ``vector``, by the polarization identity
    ``r.v = (|r + v|^2 - |r - v|^2) / 4``: two ``math.dist`` calls a row run the products in C,
    where ``sum(map(mul, row, vector))`` made a float object of each product (2.9 vs 3.8 ms a
    table of 527 x 256 here). Within about 1e-15 of the exact sums, far inside the float32
    noise of numpy's matrix product."""
    plus, minus = tuple(-x for x in vector), tuple(vector)
    dist, dims, values = math.dist, table.dims, table.values()
    return [
        (dist(row, plus) ** 2 - dist(row, minus) ** 2) / 4.0
        for row in (tuple(values[i : i + dims]) for i in range(0, table.rows * dims, dims))
    ]


def _unit_max(values: list[float]) -> list[float]:
    peak = max(values, default=0.0)
    return [v / peak for v in values] if peak > 0 else values


def _positive_z(values: list[float], live: list[bool]) -> list[float]:
    """How many standard deviations above the mean of the live slots, at least 0."""
    sample = [v for v, alive in zip(values, live, strict=True) if alive]
    if not sample:
        return [0.0] * len(values)
    mean = math.fsum(sample) / len(sample)
    spread = math.sqrt(math.fsum((v - mean) ** 2 for v in sample) / len(sample))
    if spread <= 0.0:
        return [0.0] * len(values)
    return [
        max((v - mean) / spread, 0.0) if alive else 0.0
        for v, alive in zip(values, live, strict=True)
    ]


def top_slots(
    values: Sequence[float],
    names: Sequence[str | None],
    limit: int,
    keep: Callable[[str], bool] | None = None,
) -> list[tuple[str, float]]:
    """:func:`pegboard.search.fusion.top_slots` of a list: the ``limit`` best positive-scored
    names that ``keep`` accepts, ties broken by name."""
    found = [
        (name, score)
        for name, score in zip(names, values, strict=True)
        if score > 0 and name is not None and (keep is None or keep(name))
    ]
    found.sort(key=lambda item: (-item[1], item[0]))
    return found[:limit]

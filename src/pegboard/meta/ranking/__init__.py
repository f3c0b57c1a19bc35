"""Rankers behind ``tool_search``; :func:`default_index` picks the best one installed.

Why the default stays lexical (BM25F + namespace summaries) and dense fusion is opt-in
(``default_index(dense=True)``), measured with ``bench/search.py`` on 2026-11-30:

* quality: dense fusion is better alone (hit@5 livemcpbench 0.670 vs 0.574, metatool 0.700
  vs 0.652, sealtools 0.997 vs 0.994) but not pooled (metatool queries over 4,802 tools 0.396
  vs 0.407);
* speed: it meets the 2 ms p50 budget at 4,802 tools (0.6-1.5 ms), yet its p99 reaches 2-3 ms,
  its cold build is ~0.8 s slower, and the first search loads a 31 MB table (~0.4 s);
* behaviour: a dense signal scores every tool, so a query of nonsense or of a missing
  capability still returns "matches" instead of the "nothing matches, rephrase" answer that
  ``tool_search`` gives the model (the standardised cosine keeps only above-average tools, but
  some tool is always above average).

Tried and not kept (no gain on every dataset): RRF of lexical and dense at k 20/60, raw,
max-scaled and top-50 min-max cosine at several weights, IDF-weighted query-term coverage,
namespace relevance from the best tool score of each namespace, per-namespace diversity in the
top results, pseudo-relevance feedback, and per-field BM25 ``b``/weights/``k1`` variations.
"""

from __future__ import annotations

from pathlib import Path

from pegboard.meta.index import SearchIndex
from pegboard.meta.ranking.dense import Embedder, StaticEmbedder, VectorCache, shared_embedder
from pegboard.meta.ranking.index import FusionParams, LexicalIndex, ToolIndex
from pegboard.meta.ranking.lexical import BM25FParams
from pegboard.meta.ranking.text import tokenize

DENSE_FUSION = FusionParams(namespace_weight=0.0, dense_weight=0.1)


def default_index(*, dense: bool = False, cache_dir: Path | None = None) -> SearchIndex:
    """A fresh, empty index with pegboard's default ranking.

    BM25F over tool fields, with namespace summaries reordering the matches. ``dense=True``
    adds the static-embedding signal instead of the namespace one (on the eval data the two
    together concentrate results on too few namespaces); vectors are cached under
    ``cache_dir`` when given.
    """
    if not dense:
        return ToolIndex()
    embedder: Embedder = shared_embedder()
    if cache_dir is not None:
        embedder = VectorCache(cache_dir, embedder)
    return ToolIndex(embedder=embedder, fusion=DENSE_FUSION)


__all__ = [
    "BM25FParams",
    "Embedder",
    "FusionParams",
    "LexicalIndex",
    "StaticEmbedder",
    "ToolIndex",
    "VectorCache",
    "default_index",
    "tokenize",
]

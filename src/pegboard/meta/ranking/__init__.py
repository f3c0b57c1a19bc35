"""Rankers behind ``tool_search``; :func:`default_index` picks the best one installed."""

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

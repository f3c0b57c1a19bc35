"""Rankers behind ``tool_search``; :func:`default_index` picks the best one installed.

Three rankers, measured with ``bench/search.py`` (figures in ``bench/RESULTS.md``; hit@5 on
livemcpbench / metatool / sealtools: lexical 0.574 / 0.652 / 0.994, dense without the extra
0.596 / 0.698 / 0.996, dense with it 0.670 / 0.756 / 0.996):

* ``lexical``: BM25F over tool fields with namespace summaries reordering the matches. No
  model at all; the only choice that returns nothing for a query of nonsense words *and* for
  a query whose words no tool uses.
* ``dense`` without the semantic extra: BM25F fused with the static word-piece embeddings
  distilled from all-MiniLM-L6-v2 that ship inside pegboard (7.8 MB).
* ``dense`` with the semantic extra (``pip install 'pegboard[semantic]'``, part of the README
  install): BM25F fused with both the distilled MiniLM table and WordLlama's token embeddings.
  The two models see different things (WordLlama is much better on short, vague requests;
  MiniLM on long task descriptions), and their standardised cosines add up.

``default_index()`` uses ``dense`` (both models when the extra is installed). Dense signals
score every tool, so a query whose only words are unknown to the catalog and to the models'
dictionary (``xyzzy``) still gets "nothing matches"; a real word the catalog lacks ("rain"
for a weather tool) finds tools by meaning, which is the point.

Tried and not kept (no gain on every dataset): RRF of lexical and dense at k 20/60, raw,
max-scaled and top-50 min-max cosine at several weights, IDF-weighted query-term coverage,
namespace relevance from the best tool score of each namespace, per-namespace diversity in the
top results, pseudo-relevance feedback, per-field BM25 ``b``/weights/``k1`` variations, query
expansion with each word's nearest vocabulary neighbours, rewriting file paths in queries, a
transformer (multilingual-e5-small, 4-bit) as the dense signal, per-clause search of
multi-step requests, maximal-marginal-relevance diversification of the top results, removing
the catalog's top principal components from the vectors, other weights for query words the
catalog lacks, and soft word matching (each query word's best cosine to a tool's words).
``bench/search_ceiling.py`` shows why tuning these signals further cannot reach the issue's
livemcpbench and pooled targets: even choosing the best of them per query falls short.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard.search.interface import SearchIndex

if TYPE_CHECKING:
    from pegboard.search.dense import Embedder, StaticEmbedder, VectorCache
    from pegboard.search.index import DenseSignal, FusionParams, LexicalIndex, ToolIndex
    from pegboard.search.lexical import BM25FParams
    from pegboard.search.text import tokenize
    from pegboard.search.wordllama import semantic_available

    DENSE_FUSION: FusionParams

# Weights of each model's standardised cosine; the namespace signal is off with dense signals
# (together they concentrate results on too few namespaces).
MINILM_ONLY_WEIGHT = 0.1
MINILM_WEIGHT = 0.15
WORDLLAMA_WEIGHT = 0.15

# The engine (numpy, the embedding tables) loads when an index is first built, not when
# ``pegboard.search.interface`` is imported by the deferral layer: ``import pegboard`` stays
# free of numpy.
_LAZY = {
    "BM25FParams": "pegboard.search.lexical",
    "DenseSignal": "pegboard.search.index",
    "Embedder": "pegboard.search.dense",
    "FusionParams": "pegboard.search.index",
    "LexicalIndex": "pegboard.search.index",
    "StaticEmbedder": "pegboard.search.dense",
    "ToolIndex": "pegboard.search.index",
    "VectorCache": "pegboard.search.dense",
    "semantic_available": "pegboard.search.wordllama",
    "tokenize": "pegboard.search.text",
}


def __getattr__(name: str) -> Any:
    if name == "DENSE_FUSION":
        from pegboard.search.index import FusionParams

        fusion = globals()["DENSE_FUSION"] = FusionParams(namespace_weight=0.0)
        return fusion
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pegboard.search' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


# Where catalog vectors are cached by default; set it empty to turn the default cache off.
CACHE_DIR_ENV = "PEGBOARD_CACHE_DIR"


def default_cache_dir() -> Path | None:
    """The directory of the on-disk vector cache :func:`default_index` uses unless told.

    ``$PEGBOARD_CACHE_DIR`` when set (empty: no cache), else ``vectors`` in the user cache
    directory (``~/.cache/pegboard/vectors`` on Linux).
    """
    import platformdirs

    env = os.environ.get(CACHE_DIR_ENV)
    if env is not None:
        return Path(env).expanduser() if env.strip() else None
    return Path(platformdirs.user_cache_dir("pegboard", appauthor=False)) / "vectors"


def dense_signals(
    cache_dir: Path | None = None, *, semantic: bool | None = None
) -> list[DenseSignal]:
    """The embedding signals of the ``dense`` ranker, with on-disk vector caches if asked.

    ``semantic`` chooses whether WordLlama joins the built-in model (default: when the
    semantic extra is installed; ``True`` without it raises ``OptionalDependencyMissing``).
    """
    from pegboard.search.dense import VectorCache, shared_embedder
    from pegboard.search.index import DenseSignal
    from pegboard.search.wordllama import semantic_available, shared_wordllama

    def cached(embedder: Embedder) -> Embedder:
        return embedder if cache_dir is None else VectorCache(cache_dir, embedder)

    if not (semantic_available() if semantic is None else semantic):
        return [DenseSignal(cached(shared_embedder()), MINILM_ONLY_WEIGHT)]
    return [
        DenseSignal(cached(shared_embedder()), MINILM_WEIGHT),
        DenseSignal(cached(shared_wordllama()), WORDLLAMA_WEIGHT),
    ]


def default_index(
    *,
    dense: bool = True,
    cache_dir: Path | None = None,
    cache: bool = True,
    store: Path | None = None,
    build_apart: bool = False,
) -> SearchIndex:
    """A fresh, empty index with pegboard's default ranking.

    ``dense=True`` (the default): BM25F fused with the embedding signals installed (see the
    module docstring); ``dense=False``: BM25F with namespace summaries only. Catalog vectors
    are cached on disk (under ``cache_dir``, else :func:`default_cache_dir`), so an unchanged
    tool is embedded once across processes; ``cache=False`` embeds in memory only. With
    ``store``, the built index itself is kept in that directory and loaded by the next process
    with the same catalog (:class:`~pegboard.search.stored.StoredIndex`); ``build_apart``
    builds it in a child process, so that this one keeps none of the build's memory.
    """
    from pegboard.search.index import ToolIndex

    def make() -> ToolIndex:
        if not dense:
            return ToolIndex()
        directory = (cache_dir or default_cache_dir()) if cache else None
        fusion: FusionParams = __getattr__("DENSE_FUSION")
        return ToolIndex(dense=dense_signals(directory), fusion=fusion)

    if store is None:
        return make()
    from pegboard.search.stored import StoredIndex

    child = None
    if build_apart:
        child = {"dense": dense, "cache": cache, "cache_dir": str(cache_dir) if cache_dir else None}
    return StoredIndex(store, make, child=child)


__all__ = [
    "CACHE_DIR_ENV",
    "DENSE_FUSION",
    "BM25FParams",
    "DenseSignal",
    "Embedder",
    "FusionParams",
    "LexicalIndex",
    "StaticEmbedder",
    "ToolIndex",
    "VectorCache",
    "default_cache_dir",
    "default_index",
    "dense_signals",
    "semantic_available",
    "tokenize",
]

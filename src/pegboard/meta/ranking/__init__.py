"""Rankers behind ``tool_search``; :func:`default_index` picks the best one installed."""

from __future__ import annotations

from pegboard.meta.index import SearchIndex
from pegboard.meta.ranking.index import LexicalIndex
from pegboard.meta.ranking.lexical import BM25FParams
from pegboard.meta.ranking.text import tokenize


def default_index() -> SearchIndex:
    """A fresh, empty index with pegboard's default ranking."""
    return LexicalIndex()


__all__ = ["BM25FParams", "LexicalIndex", "default_index", "tokenize"]

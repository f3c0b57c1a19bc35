"""Keyword baselines as a model actually drives them: the query's content words, not the query.

The literal ``substring`` and ``regex`` baselines hand the whole natural-language request to a
filter that expects a keyword or a pattern, so they almost never match. A model using such a
tool writes keywords instead; these two baselines do the same, mechanically:

* ``substring-terms``: each content word of the query (lower-cased, stopwords removed) as a
  case-insensitive substring of name + description + namespace label; tools ranked by how many
  distinct words they contain, ties by name;
* ``regex-terms``: the content words joined with ``|`` (each escaped), ``re.search``-ed with
  ``IGNORECASE`` over name + description; tools ranked by how many distinct alternatives match,
  ties by name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pegboard.core.entry import ToolEntry
from pegboard.meta.ranking.text import STOPWORDS

_WORD = re.compile(r"[^\W_]+")


def content_words(query: str) -> list[str]:
    """The query's distinct lower-cased words without stopwords, in query order."""
    found = (w for w in _WORD.findall(query.casefold()) if w not in STOPWORDS)
    return list(dict.fromkeys(found))


def _own_name(entry: ToolEntry) -> str:
    return entry.source.tool_name if entry.source else entry.name


def _ranked(counts: list[tuple[int, str]], limit: int) -> list[str]:
    counts.sort(key=lambda item: (-item[0], item[1]))
    return [name for _, name in counts[:limit]]


class SubstringTermsBaseline:
    name = "substring-terms"

    def __init__(self) -> None:
        self._rows: list[tuple[str, str]] = []

    def build(self, entries: Sequence[ToolEntry]) -> None:
        self._rows = [
            (e.name, "\n".join((_own_name(e), e.tool.description, e.label)).casefold())
            for e in entries
        ]

    def rank(self, query: str, limit: int) -> list[str]:
        terms = content_words(query)
        counts = [(sum(t in text for t in terms), name) for name, text in self._rows]
        return _ranked([c for c in counts if c[0]], limit)


class RegexTermsBaseline:
    name = "regex-terms"

    def __init__(self) -> None:
        self._rows: list[tuple[str, str]] = []

    def build(self, entries: Sequence[ToolEntry]) -> None:
        self._rows = [(e.name, f"{_own_name(e)}\n{e.tool.description}") for e in entries]

    def rank(self, query: str, limit: int) -> list[str]:
        terms = content_words(query)
        if not terms:
            return []
        pattern = re.compile("|".join(map(re.escape, terms)), re.IGNORECASE)
        counts: list[tuple[int, str]] = []
        for name, text in self._rows:
            if pattern.search(text):
                distinct = {m.group(0).casefold() for m in pattern.finditer(text)}
                counts.append((len(distinct), name))
        return _ranked(counts, limit)

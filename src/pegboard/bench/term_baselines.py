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

import numpy as np

from pegboard.core.entry import ToolEntry
from pegboard.search.text import STOPWORDS

_WORD = re.compile(r"[^\W_]+")
_SEPARATOR = "\x00"  # never inside a word, so no match spans two tools


def content_words(query: str) -> list[str]:
    """The query's distinct lower-cased words without stopwords, in query order."""
    found = (w for w in _WORD.findall(query.casefold()) if w not in STOPWORDS)
    return list(dict.fromkeys(found))


def _own_name(entry: ToolEntry) -> str:
    return entry.source.tool_name if entry.source else entry.name


class _WordCounts:
    """For a word list, how many of the words occur (case-insensitively) in each text.

    Equivalent to testing every word against every text, but done as one literal scan of all
    texts joined, per word, so a 5,000-tool catalog costs milliseconds per query.
    """

    def __init__(self, names: Sequence[str], texts: Sequence[str]) -> None:
        self.names = list(names)
        folded = [t.casefold().replace(_SEPARATOR, " ") for t in texts]
        self._joined = _SEPARATOR.join(folded)
        lengths = np.array([len(t) + 1 for t in folded], dtype=np.int64)
        self._starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])

    def counts(self, words: Sequence[str]) -> np.ndarray:
        out = np.zeros(len(self.names), dtype=np.int64)
        for word in words:
            found = [m.start() for m in re.finditer(re.escape(word), self._joined)]
            if found:
                rows = np.searchsorted(self._starts, np.array(found), side="right") - 1
                out[np.unique(rows)] += 1
        return out

    def ranked(self, words: Sequence[str], limit: int) -> list[str]:
        """Names with at least one word, most distinct words first, ties by name."""
        counts = self.counts(words)
        hits = [(int(counts[i]), self.names[i]) for i in np.flatnonzero(counts)]
        hits.sort(key=lambda item: (-item[0], item[1]))
        return [name for _, name in hits[:limit]]


class SubstringTermsBaseline:
    name = "substring-terms"

    def __init__(self) -> None:
        self._counts = _WordCounts([], [])

    def build(self, entries: Sequence[ToolEntry]) -> None:
        texts = ["\n".join((_own_name(e), e.tool.description, e.label)) for e in entries]
        self._counts = _WordCounts([e.name for e in entries], texts)

    def rank(self, query: str, limit: int) -> list[str]:
        return self._counts.ranked(content_words(query), limit)


class RegexTermsBaseline:
    """``re.search(w1|w2|..., IGNORECASE)`` as the filter; rank = alternatives that match.

    A text matches the alternation exactly when one of its (escaped, literal) alternatives
    occurs in it, so the filter and the count are computed together, per alternative.
    """

    name = "regex-terms"

    def __init__(self) -> None:
        self._counts = _WordCounts([], [])

    def build(self, entries: Sequence[ToolEntry]) -> None:
        texts = [f"{_own_name(e)}\n{e.tool.description}" for e in entries]
        self._counts = _WordCounts([e.name for e in entries], texts)

    def rank(self, query: str, limit: int) -> list[str]:
        return self._counts.ranked(content_words(query), limit)

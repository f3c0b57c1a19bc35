"""The methods ``pegboard bench search`` compares: pegboard's indexes and three baselines.

* ``bm25``: plain BM25 over name + server + description + parameter names, as in
  ``shared/eval/baseline_bm25.py`` (no field weights, no stemming, no stopwords);
* ``substring``: the reference design's search: the whole query as a case-insensitive
  substring of the name, description or namespace label, hits sorted by name;
* ``regex``: Anthropic's regex tool search: the query is a Python regular expression passed to
  ``re.search`` over name and description (escaped when it does not compile), catalog order;
* ``substring-terms`` and ``regex-terms``: the same two filters fed the query's content words,
  as a model writes them (see :mod:`pegboard.bench.term_baselines`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Protocol

from pegboard.core.entry import ToolEntry
from pegboard.search.interface import SearchIndex

ENCODER_WEIGHT = 0.15  # as each static model weighs in the default ranker


class Method(Protocol):
    """A ranking method under test: built once over the catalog, then asked per query."""

    name: str

    def build(self, entries: Sequence[ToolEntry]) -> None: ...

    def rank(self, query: str, limit: int) -> list[str]: ...


def own_name(entry: ToolEntry) -> str:
    return entry.source.tool_name if entry.source else entry.name


class IndexMethod:
    """Any :class:`SearchIndex`, queried exactly as ``tool_search`` queries it."""

    def __init__(self, name: str, factory: Callable[[], SearchIndex]) -> None:
        self.name = name
        self._factory = factory
        self._index: SearchIndex = factory()

    def build(self, entries: Sequence[ToolEntry]) -> None:
        self._index = self._factory()
        self._index.upsert(entries)

    def rank(self, query: str, limit: int) -> list[str]:
        return [hit.name for hit in self._index.search([query], limit=limit)]


def _bm25_tokens(text: str) -> list[str]:
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [t for t in re.split(r"[^0-9a-zA-Z\u4e00-\u9fff]+", text.lower()) if t]


class BM25Baseline:
    name = "bm25"

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._names: list[str] = []
        self._lengths: list[int] = []
        self._avg = 1.0
        self._postings: dict[str, list[tuple[int, int]]] = {}
        self._idf: dict[str, float] = {}

    def build(self, entries: Sequence[ToolEntry]) -> None:
        docs = []
        for e in entries:
            props = e.tool.input_schema.get("properties") or {}
            text = " ".join([own_name(e), e.namespace, e.tool.description, " ".join(props)])
            docs.append(_bm25_tokens(text))
        self._names = [e.name for e in entries]
        self._lengths = [len(d) for d in docs]
        self._avg = sum(self._lengths) / max(1, len(docs))
        self._postings = {}
        for i, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                self._postings.setdefault(term, []).append((i, tf))
        n = len(docs)
        self._idf = {
            t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self._postings.items()
        }

    def rank(self, query: str, limit: int) -> list[str]:
        scores: dict[int, float] = {}
        for term in set(_bm25_tokens(query)):
            idf = self._idf.get(term)
            if idf is None:
                continue
            for i, tf in self._postings[term]:
                norm = tf + self.k1 * (1 - self.b + self.b * self._lengths[i] / self._avg)
                scores[i] = scores.get(i, 0.0) + idf * tf * (self.k1 + 1) / norm
        best = sorted(scores.items(), key=lambda item: (-item[1], self._names[item[0]]))
        return [self._names[i] for i, _ in best[:limit]]


class SubstringBaseline:
    name = "substring"

    def __init__(self) -> None:
        self._rows: list[tuple[str, str]] = []

    def build(self, entries: Sequence[ToolEntry]) -> None:
        rows = [
            (e.name, "\n".join((own_name(e), e.name, e.tool.description, e.label)).casefold())
            for e in entries
        ]
        self._rows = sorted(rows)

    def rank(self, query: str, limit: int) -> list[str]:
        needle = query.casefold()
        return [name for name, text in self._rows if needle in text][:limit]


class RegexBaseline:
    name = "regex"

    def __init__(self) -> None:
        self._rows: list[tuple[str, str]] = []

    def build(self, entries: Sequence[ToolEntry]) -> None:
        self._rows = sorted((e.name, f"{own_name(e)}\n{e.tool.description}") for e in entries)

    def rank(self, query: str, limit: int) -> list[str]:
        try:
            pattern = re.compile(query)
        except re.error:
            pattern = re.compile(re.escape(query))
        hits: list[str] = []
        for name, text in self._rows:
            if pattern.search(text):
                hits.append(name)
                if len(hits) == limit:
                    break
        return hits


def available_methods() -> dict[str, Callable[[], Method]]:
    """Every method this install can run, by name, pegboard's first."""
    from pegboard.bench.term_baselines import RegexTermsBaseline, SubstringTermsBaseline
    from pegboard.search import DENSE_FUSION, ToolIndex, default_index, dense_signals

    def builtin_model_only() -> ToolIndex:
        return ToolIndex(dense=dense_signals(semantic=False), fusion=DENSE_FUSION)

    def with_encoder() -> ToolIndex:
        # Tried for tool_search (issue 28): the sentence encoder as one more dense signal.
        from pegboard.search.encoder import shared_encoder
        from pegboard.search.index import DenseSignal

        encoder = DenseSignal(shared_encoder(), ENCODER_WEIGHT)
        return ToolIndex(dense=[*dense_signals(), encoder], fusion=DENSE_FUSION)

    methods: dict[str, Callable[[], Method]] = {
        # Cold builds: no on-disk vector cache, so build times compare like with like.
        "pegboard": lambda: IndexMethod("pegboard", lambda: default_index(cache=False)),
        "pegboard-minilm": lambda: IndexMethod("pegboard-minilm", builtin_model_only),
        "pegboard-lexical": lambda: IndexMethod(
            "pegboard-lexical", lambda: default_index(dense=False)
        ),
        "pegboard+minilm-l6": lambda: IndexMethod("pegboard+minilm-l6", with_encoder),
    }
    methods["bm25"] = BM25Baseline
    methods["substring"] = SubstringBaseline
    methods["substring-terms"] = SubstringTermsBaseline
    methods["regex"] = RegexBaseline
    methods["regex-terms"] = RegexTermsBaseline
    return methods

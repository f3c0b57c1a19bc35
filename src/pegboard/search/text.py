"""Tokenisation shared by every ranker: identifiers, English words and CJK text.

* identifiers split on ``_ - . /`` and camelCase (``getHTTPResponse`` -> ``get http response``);
* Latin words are lower-cased and Snowball-stemmed (``searching`` -> ``search``);
* CJK runs become overlapping character bigrams (a run of one character stays a unigram), the
  usual dictionary-free segmentation for retrieval, so ``搜索网页`` matches ``网页搜索``.
"""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer

_CAMEL_LOWER_UPPER = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL_ACRONYM = re.compile(r"([A-Z]{2,})([A-Z][a-z])")
_CJK_RANGES = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\uf900-\ufaff"  # compatibility ideographs
)
# One pass: a CJK run, or one Latin word piece: a plural acronym (``URLs``), an acronym not
# followed by lower case (``HTTP`` in ``HTTPResponse``), a capitalised or lower-case word with
# trailing digits (``Response``, ``oauth2``), a number, or any other run of letters.
_LATIN = r"[A-Z]{2,}s(?![a-z])|[A-Z]+[0-9]*(?![a-z])|[A-Z]?[a-z]+[0-9]*|[0-9]+"
_ASCII_RUN = re.compile(_LATIN)


# The patterns with CJK ranges take about 2 ms each to compile (a charset over the ranges):
# compiled on their first use, so an ASCII query (a one-shot ``pegboard tools search``) never
# pays for them.
@lru_cache(maxsize=1)
def _run() -> re.Pattern[str]:
    return re.compile(rf"([{_CJK_RANGES}]+)|({_LATIN}|[^\W_A-Za-z0-9{_CJK_RANGES}]+)")


@lru_cache(maxsize=1)
def _cjk() -> re.Pattern[str]:
    return re.compile(rf"[{_CJK_RANGES}]")


# Function words that never tell tools apart; kept tiny so that tool vocabulary ("list", "get",
# "all", "new") still counts.
_STOPWORDS_TEXT = """
    a an and are as at be been being but by can could do does did for from had has have how i
    if in into is it its me my of on or our please so than that the their them then there these
    this those to too us was we were what when where which while who whom why will with would you
    your let lets want need some any just also via"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())

_stemmer = Stemmer.Stemmer("english")
# Inflected forms whose stem is another word: Snowball makes "times" (3 times 4: multiply)
# "time" (the clock), so a calculator need would find the time tools. Kept as written.
UNSTEMMED = frozenset({"times"})


def split_identifier(text: str) -> str:
    """Insert spaces at camelCase and acronym boundaries (``getHTTPResponse``)."""
    text = _CAMEL_ACRONYM.sub(r"\1 \2", text)
    return _CAMEL_LOWER_UPPER.sub(r"\1 \2", text)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


@lru_cache(maxsize=131072)
def term_of(word: str) -> str | None:
    """The index term of one Latin word (None for a stopword)."""
    lowered = word.lower()
    if lowered in STOPWORDS:
        return None
    return lowered if lowered in UNSTEMMED else stem(lowered)


_term = term_of


def _cjk_grams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def words(text: str) -> list[str]:
    """Lower-cased surface words (no stemming, stopwords kept), CJK runs as bigrams."""
    out: list[str] = []
    for cjk, latin in _run().findall(text):
        if cjk:
            out.extend(_cjk_grams(cjk))
        else:
            out.append(latin.lower())
    return out


def tokenize(text: str) -> list[str]:
    """Index terms of ``text``: stopwords dropped, Latin stemmed, CJK as bigrams."""
    if text.isascii():
        return [t for t in map(_term, _ASCII_RUN.findall(text)) if t is not None]
    out: list[str] = []
    for cjk, latin in _run().findall(text):
        if cjk:
            out.extend(_cjk_grams(cjk))
        else:
            term = _term(latin)
            if term is not None:
                out.append(term)
    return out


def has_cjk(text: str) -> bool:
    return _cjk().search(text) is not None

"""BERT's uncased WordPiece tokenizer in plain Python (what the static model was trained on).

Identifiers are split at camelCase first (``getStockPrice`` -> ``get stock price``), then the
usual BERT steps: accents stripped, lower-cased, punctuation and CJK characters split off, and
each word cut greedily into the longest word pieces of the vocabulary (``##`` marks a
continuation). Words outside the vocabulary are dropped rather than mapped to ``[UNK]``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from functools import lru_cache

from pegboard.search.text import split_identifier
from pegboard.search.vocab import as_dict

MAX_WORD_CHARS = 100


_CJK_CHARS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
# A CJK character alone, a run of letters and digits, or any other visible character alone
# (BERT splits off every punctuation mark, underscore included).
_PIECE = rf"[{_CJK_CHARS}]|[^\W_{_CJK_CHARS}]+|\S"
# The same pieces of ASCII text (no CJK character to split off), without the CJK ranges'
# charset: about 1.5 ms less to compile in a process that reads only ASCII text.
_ASCII_PIECE = re.compile(r"[^\W_]+|\S")
_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


@lru_cache(maxsize=1)
def _pieces() -> re.Pattern[str]:
    """:data:`_PIECE` compiled, on first use (a non-ASCII text)."""
    return re.compile(_PIECE)


def basic_words(text: str) -> list[str]:
    """Accent-stripped lower-case words, each punctuation mark and CJK character on its own."""
    text = split_identifier(text).lower()
    if text.isascii():
        return _ASCII_PIECE.findall(text)
    text = _COMBINING.sub("", unicodedata.normalize("NFD", text))
    return _pieces().findall(text)


class WordPiece:
    """Text -> vocabulary ids; ``pieces(word)`` gives one basic word's ids (cached)."""

    def __init__(self, vocab: Mapping[str, int]) -> None:
        self._vocab = vocab
        self.pieces = lru_cache(maxsize=65536)(self._word_pieces)

    @property
    def vocab(self) -> Mapping[str, int]:
        return self._vocab

    def bulk(self) -> WordPiece:
        """The same tokenizer over a dict of the vocabulary, for many texts at once (lookups
        several times faster than a :class:`~pegboard.search.vocab.Vocabulary`'s); drop it
        after."""
        return WordPiece(as_dict(self._vocab))

    def _word_pieces(self, word: str) -> tuple[int, ...]:
        if len(word) > MAX_WORD_CHARS:
            return ()
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = self._vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return ()
            ids.append(found)
            start = end
        return tuple(ids)

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for word in basic_words(text):
            ids.extend(self.pieces(word))
        return ids

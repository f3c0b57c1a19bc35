"""BERT's uncased WordPiece tokenizer in plain Python (what the static model was trained on).

Identifiers are split at camelCase first (``getStockPrice`` -> ``get stock price``), then the
usual BERT steps: accents stripped, lower-cased, punctuation and CJK characters split off, and
each word cut greedily into the longest word pieces of the vocabulary (``##`` marks a
continuation). Words outside the vocabulary are dropped rather than mapped to ``[UNK]``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from functools import lru_cache

from pegboard.meta.ranking.text import split_identifier

MAX_WORD_CHARS = 100


def _is_split_char(ch: str) -> bool:
    code = ord(ch)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    if unicodedata.category(ch).startswith("P"):
        return True
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0xF900 <= code <= 0xFAFF
        or 0x20000 <= code <= 0x2FA1F
    )


def basic_words(text: str) -> list[str]:
    """Accent-stripped lower-case words, each punctuation mark and CJK character on its own."""
    text = unicodedata.normalize("NFD", split_identifier(text).lower())
    out: list[str] = []
    current: list[str] = []
    for ch in text:
        if unicodedata.category(ch) == "Mn":
            continue
        if ch.isspace() or unicodedata.category(ch).startswith("C"):
            if current:
                out.append("".join(current))
                current = []
        elif _is_split_char(ch):
            if current:
                out.append("".join(current))
                current = []
            out.append(ch)
        else:
            current.append(ch)
    if current:
        out.append("".join(current))
    return out


class WordPiece:
    """Text -> vocabulary ids."""

    def __init__(self, vocab: Mapping[str, int]) -> None:
        self._vocab = vocab
        self._pieces = lru_cache(maxsize=65536)(self._word_pieces)

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
            ids.extend(self._pieces(word))
        return ids

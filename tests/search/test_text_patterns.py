"""The tokenizers' ASCII paths: the same words as the full Unicode patterns, which an ASCII
text never compiles (each CJK-range pattern costs about 2 ms to compile)."""

from __future__ import annotations

import itertools
import re

from pegboard.search import text, wordpiece

# Every ASCII character (controls, the separators str.isspace() counts, punctuation, "_").
ASCII = "".join(map(chr, range(128)))
SAMPLES = [
    ASCII,
    ASCII[::-1],
    "getHTTPResponse of URLs, oauth2 tokens_and-dashes.x/y",
    "a\x1cb\x1fc\x0bd\x85e",
    *("".join(pair) for pair in itertools.product("aZ9_ .\x1c\t-", repeat=3)),
]


def test_ascii_text_splits_into_the_same_pieces_as_the_unicode_pattern() -> None:
    full = re.compile(wordpiece._PIECE)
    for sample in SAMPLES:
        if sample.isascii():
            assert wordpiece._ASCII_PIECE.findall(sample) == full.findall(sample), sample
    assert wordpiece.basic_words("Read the README_file, then: ok!") == [
        "read", "the", "readme", "_", "file", ",", "then", ":", "ok", "!",
    ]  # fmt: skip


def test_an_ascii_text_compiles_no_cjk_pattern() -> None:
    text._run.cache_clear()
    text._cjk.cache_clear()
    wordpiece._pieces.cache_clear()
    assert text.tokenize("search the weather forecast") == ["search", "weather", "forecast"]
    assert wordpiece.basic_words("weather forecast") == ["weather", "forecast"]
    assert text._run.cache_info().currsize == 0
    assert wordpiece._pieces.cache_info().currsize == 0
    # a CJK text compiles them, and is split as before
    assert text.tokenize("搜索网页 search") == ["搜索", "索网", "网页", "search"]
    assert wordpiece.basic_words("网页 café") == ["网", "页", "cafe"]
    assert text.has_cjk("网")
    assert not text.has_cjk("web")
    assert text._run.cache_info().currsize == 1
    assert wordpiece._pieces.cache_info().currsize == 1

"""WordLlama's LLaMA-2 tokenizer in plain Python, from the vocabulary alone.

WordLlama ships the tokenizer as a Hugging Face ``tokenizer.json``: a SentencePiece BPE of
32,000 pieces converted to ``tokenizers``' BPE, whose 61,249 merges are exactly the pairs of
pieces that concatenate to a piece, ranked by (the merged piece is all ``▁``, the merged
piece's id, the left piece's id): the conversion's order, derivable from the vocabulary, so
only the vocabulary is kept (a :class:`~pegboard.search.vocab.Vocabulary`, ~1 MB, mapped from
the vector cache directory). ``tokenizers`` holds 11 MB of Rust tables for the
same file, and its library 4 MB more, in every ``pegboard serve`` at rest (bench/RESULTS.md,
issue 29 item 5). ``tests/search/test_llama_bpe.py`` checks the ids against ``tokenizers``.

The steps are the file's: the special pieces (``<unk> <s> </s>``) are split off the raw text
first, each remaining part gets ``▁`` prepended and its spaces replaced by ``▁``, then BPE runs
with byte fallback (a character outside the vocabulary becomes its UTF-8 bytes' pieces). No
piece has a ``▁`` after another character, so merges never cross the start of a ``▁`` run and
each run of ``▁`` with the characters up to the next one is merged on its own (cached).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from pegboard.search.vocab import as_dict, cached_vocabulary

SPACE = "\u2581"  # ▁, SentencePiece's word-start mark
_SPECIAL = ("<unk>", "<s>", "</s>")
_SPLIT_SPECIAL = re.compile("(" + "|".join(re.escape(s) for s in _SPECIAL) + ")")
_SEGMENT = re.compile(f"{SPACE}*[^{SPACE}]+|{SPACE}+")
# A merged id is below 2**15 (32,000 pieces); merges into an all-▁ piece rank after the rest.
_ID_BITS = 15
_SPACE_RUN_RANK = 1 << _ID_BITS
_NO_MERGE = 1 << (3 * _ID_BITS)

# The tokenizer.json settings this reimplementation follows; another file is refused.
_NORMALIZER = {
    "type": "Sequence",
    "normalizers": [
        {"type": "Prepend", "prepend": SPACE},
        {"type": "Replace", "pattern": {"String": " "}, "content": SPACE},
    ],
}
_MODEL = {
    "type": "BPE",
    "dropout": None,
    "continuing_subword_prefix": None,
    "end_of_word_suffix": None,
    "byte_fallback": True,
    "ignore_merges": False,
}
CACHED_SEGMENTS = 16384


class LlamaBPE:
    """Text -> LLaMA-2 piece ids, as ``tokenizers`` encodes it without special tokens added."""

    def __init__(self, vocab: Mapping[str, int]) -> None:
        self._vocab = vocab
        self._special = {s: vocab[s] for s in _SPECIAL}
        self._bytes = [vocab[f"<0x{b:02X}>"] for b in range(256)]
        self.segment = lru_cache(maxsize=CACHED_SEGMENTS)(self._segment)

    @classmethod
    def from_file(cls, path: Path) -> LlamaBPE:
        """The tokenizer of a ``tokenizer.json``; ValueError when it is not LLaMA-2's kind.

        Its vocabulary is kept as a table in the vector cache directory
        (:func:`~pegboard.search.vocab.cached_vocabulary`): a later start reads no JSON.
        """
        return cls(cached_vocabulary(path, lambda: _read_vocab(path).items(), "llama2"))

    def bulk(self) -> LlamaBPE:
        """The same tokenizer over a dict of the vocabulary, for many texts at once (lookups
        several times faster than the table's); drop it after."""
        return LlamaBPE(as_dict(self._vocab))

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for i, part in enumerate(_SPLIT_SPECIAL.split(text)):
            if i % 2:
                ids.append(self._special[part])
            elif part:
                for segment in _SEGMENT.findall(SPACE + part.replace(" ", SPACE)):
                    ids.extend(self.segment(segment))
        return ids

    def _segment(self, segment: str) -> tuple[int, ...]:
        # Every piece of the file merges back into itself (tests/search/test_llama_bpe.py).
        whole = self._vocab.get(segment)
        return (whole,) if whole is not None else self.merges(segment)

    def merges(self, segment: str) -> tuple[int, ...]:
        """BPE over one segment: the lowest-ranked adjacent pair merges first, the leftmost of
        equal ones, until no pair is a merge (``tokenizers``' ``Word::merge_all``). A character
        outside the vocabulary is in no merge: the runs on either side merge on their own."""
        get = self._vocab.get
        ids: list[int] = []
        for run, run_ids in _runs(segment, get):
            if run_ids is None:
                ids.extend(self._bytes[b] for b in run.encode("utf-8"))
            else:
                ids.extend(_merged(list(run), run_ids, get))
        return tuple(ids)


def _merged(
    symbols: list[str], symbol_ids: list[int], get: Callable[[str], int | None]
) -> list[int]:
    """The ids of ``symbols`` (a run of characters of the vocabulary, ``symbol_ids`` theirs)
    once merged: both lists are merged in place, pair by pair."""
    merged_ids = [0] * (len(symbols) - 1)  # of the pair (i, i + 1), when it is a piece

    def rank(i: int) -> int:
        # of the pair (i, i + 1): (order of the merged piece, id of the left piece); merges
        # into an all-``▁`` piece rank after the rest
        piece = symbols[i] + symbols[i + 1]
        merged = get(piece)
        if merged is None:
            return _NO_MERGE
        merged_ids[i] = merged
        order = merged + _SPACE_RUN_RANK if piece.strip(SPACE) == "" else merged
        return order << _ID_BITS | symbol_ids[i]

    ranks = [rank(i) for i in range(len(symbols) - 1)]
    while ranks:
        best = min(ranks)
        if best == _NO_MERGE:
            break
        i = ranks.index(best)
        symbols[i] += symbols.pop(i + 1)
        symbol_ids[i] = merged_ids.pop(i)
        del symbol_ids[i + 1], ranks[i]
        if i > 0:
            ranks[i - 1] = rank(i - 1)
        if i < len(ranks):
            ranks[i] = rank(i)
    return symbol_ids


def _read_vocab(path: Path) -> dict[str, int]:
    """The vocabulary of a LLaMA-2 ``tokenizer.json`` (ValueError for another kind)."""
    spec = json.loads(path.read_text(encoding="utf-8"))
    model: dict[str, Any] = spec.get("model") or {}
    added = sorted(t.get("content") for t in spec.get("added_tokens") or [])
    if (
        spec.get("normalizer") != _NORMALIZER
        or spec.get("pre_tokenizer") is not None
        or any(model.get(k) != v for k, v in _MODEL.items())
        or added != sorted(_SPECIAL)
        or not isinstance(model.get("vocab"), dict)
    ):
        raise ValueError(f"{path} is not a LLaMA-2 SentencePiece BPE tokenizer")
    vocab: dict[str, int] = model["vocab"]
    if max(vocab.values()) >= 1 << _ID_BITS:
        raise ValueError(f"{path} has more than {1 << _ID_BITS} pieces")
    return vocab


def _runs(segment: str, get: Callable[[str], int | None]) -> list[tuple[str, list[int] | None]]:
    """``segment`` cut before and after each character outside the vocabulary (each alone,
    with None), each run with its characters' ids (one lookup per character)."""
    found = [get(c) for c in segment]
    if None not in found:
        return [(segment, found)]  # type: ignore[list-item]
    runs: list[tuple[str, list[int] | None]] = []
    start = 0
    for i, piece in enumerate(found):
        if piece is None:
            if start < i:
                runs.append((segment[start:i], found[start:i]))  # type: ignore[arg-type]
            runs.append((segment[i], None))
            start = i + 1
    if start < len(segment):
        runs.append((segment[start:], found[start:]))  # type: ignore[arg-type]
    return runs

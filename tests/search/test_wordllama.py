"""The semantic extra's WordLlama signal (installed with the dev extra, so these run in CI)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pegboard.errors import SearchModelError
from pegboard.search import dense_signals, semantic_available
from pegboard.search.dense import StaticEmbedder
from pegboard.search.wordllama import (
    TOKENIZER,
    WEIGHTS,
    WordLlamaEmbedder,
    shared_wordllama,
    wordllama_dir,
)

from .test_dense import probe_vectors


def test_the_dev_install_has_the_semantic_extra_with_its_model_files() -> None:
    assert semantic_available()
    root = wordllama_dir()
    assert root is not None
    assert (root / WEIGHTS).is_file()
    assert (root / TOKENIZER).is_file()


def test_wordllama_vectors_are_unit_length_and_closer_for_related_texts() -> None:
    vectors = probe_vectors(shared_wordllama())
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_wordllama_query_is_the_whole_text_unless_no_word_is_kept() -> None:
    embedder = shared_wordllama()
    text = "is it going to rain tomorrow"
    whole = embedder.embed([text])[0]
    kept_one = embedder.embed_query(text, lambda word: float(word == "rain"))
    assert np.allclose(kept_one, whole, atol=1e-6)
    assert not embedder.embed_query(text, lambda word: 0.0).any()


def test_dense_signals_pair_the_builtin_model_with_wordllama_when_installed() -> None:
    both = dense_signals()
    assert [type(s.embedder) for s in both] == [StaticEmbedder, WordLlamaEmbedder]
    assert [s.weight for s in both] == [0.15, 0.15]
    alone = dense_signals(semantic=False)
    assert [(type(s.embedder), s.weight) for s in alone] == [(StaticEmbedder, 0.1)]


def test_missing_model_files_are_named_with_the_reinstall_command(tmp_path: Path) -> None:
    with pytest.raises(SearchModelError) as caught:
        WordLlamaEmbedder(tmp_path)
    message = str(caught.value)
    assert str(tmp_path / WEIGHTS) in message
    assert "pip install --force-reinstall 'pegboard[semantic]'" in message


def test_corrupt_model_files_are_reported_not_crashed_on(tmp_path: Path) -> None:
    for relative in (WEIGHTS, TOKENIZER):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_bytes(b"not a model")
    with pytest.raises(SearchModelError) as caught:
        WordLlamaEmbedder(tmp_path)
    assert str(caught.value).startswith("cannot read the WordLlama model: ")

"""The static-embedding signal: shipped with pegboard, so these run offline everywhere."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from pegboard.search import (
    CACHE_DIR_ENV,
    DENSE_FUSION,
    ToolIndex,
    VectorCache,
    default_cache_dir,
    default_index,
    dense_signals,
)
from pegboard.search.dense import (
    MODEL_DIR,
    Embedder,
    WordWeight,
    shared_embedder,
)
from pegboard.search.wordpiece import WordPiece

from .test_index import CATALOG, entry, names

Vectors = npt.NDArray[np.float32]


def test_wordpiece_splits_identifiers_and_unknown_words_into_vocabulary_pieces() -> None:
    vocab_lines = (MODEL_DIR / "vocab.txt").read_text(encoding="utf-8").splitlines()
    tokenizer = WordPiece({w: i for i, w in enumerate(vocab_lines)})
    # 搜 is not in the vocabulary: its word is dropped, never mapped to [UNK].
    ids = tokenizer.encode("getStockPrice, Café 中文 搜 bake")
    assert [vocab_lines[i] for i in ids] == [
        "get", "stock", "price", ",", "cafe", "中", "文", "ba", "##ke"
    ]  # fmt: skip


def probe_vectors(embedder: Embedder) -> Vectors:
    """Embeddings of two related texts, an unrelated one and an empty one, checked for shape
    and unit length (the empty text's vector is all zeros)."""
    vectors = embedder.embed(
        ["search the web for news", "find recent articles online", "bake a chocolate cake", ""]
    )
    assert vectors.shape == (4, 256)
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, atol=1e-5)
    assert not vectors[3].any()
    return vectors


def test_embeddings_are_unit_vectors_closer_for_related_texts() -> None:
    vectors = probe_vectors(shared_embedder())
    similar, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert similar > 0.5 > 0.1 > unrelated


def test_query_vectors_weigh_words_by_the_given_weight() -> None:
    embedder = shared_embedder()
    plain = embedder.embed(["weather city"])[0]
    assert np.allclose(embedder.embed_query("weather city", lambda word: 1.0), plain, atol=1e-6)
    only_city = embedder.embed_query("weather city", lambda word: float(word == "city"))
    assert np.allclose(only_city, embedder.embed(["city"])[0], atol=1e-6)
    assert not embedder.embed_query("weather city", lambda word: 0.0).any()


def builtin_model_only() -> ToolIndex:
    return ToolIndex(dense=dense_signals(semantic=False), fusion=DENSE_FUSION)


def test_dense_index_finds_a_tool_without_shared_words() -> None:
    lexical = default_index(dense=False)
    dense = default_index()
    for index in (lexical, dense):
        index.upsert(CATALOG)
    assert names(lexical.search(["is it going to rain tomorrow"])) == []
    assert names(dense.search(["is it going to rain tomorrow"], limit=1)) == ["get_weather"]


def test_dense_index_follows_upserts_and_removals() -> None:
    index = default_index(dense=True)
    index.upsert(CATALOG)
    index.remove(["get_weather"])
    assert "get_weather" not in names(index.search(["is it going to rain tomorrow"]))
    index.upsert([entry("rain_radar", "Precipitation radar and rain forecast.", "weather")])
    assert names(index.search(["is it going to rain tomorrow"], limit=1)) == ["rain_radar"]
    assert len(index) == len(CATALOG)


def test_dense_ranking_keeps_the_namespace_filter() -> None:
    index = default_index(dense=True)
    index.upsert(CATALOG)
    query = ["show me what is in my documents"]
    assert names(index.search(query)) == ["read_file", "listDirectory", "write_file", "web_search"]
    assert names(index.search(query, namespaces=["fs"])) == [
        "read_file",
        "listDirectory",
        "write_file",
    ]


def test_dense_signal_counts_only_tools_closer_than_the_catalog_average() -> None:
    # Cosines are standardised per query: a tool at or below the mean similarity adds nothing,
    # so a namespace with nothing related to the query yields no hits at all.
    index = builtin_model_only()
    index.upsert(CATALOG)
    # Of seven tools, two are closer than average to the query; the rest score nothing.
    assert names(index.search(["is it going to rain tomorrow"])) == ["get_weather", "send_email"]
    assert names(index.search(["is it going to rain tomorrow"], namespaces=["fs"])) == []


class CountingEmbedder:
    """The shipped embedder, counting how many texts it was asked to embed."""

    def __init__(self) -> None:
        self.inner = shared_embedder()
        self.model_id = self.inner.model_id
        self.dims = self.inner.dims
        self.embedded = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.embedded += len(texts)
        return self.inner.embed(texts)

    def embed_query(self, text: str, weight: WordWeight) -> Vectors:
        return self.inner.embed_query(text, weight)


def test_vector_cache_embeds_each_text_once_across_instances(tmp_path: Path) -> None:
    counting = CountingEmbedder()
    first = VectorCache(tmp_path, counting).embed(["alpha tool", "beta tool"])
    assert counting.embedded == 2
    second = VectorCache(tmp_path, counting).embed(["beta tool", "gamma tool", "alpha tool"])
    assert counting.embedded == 3
    assert np.array_equal(second[0], first[1])
    assert np.array_equal(second[2], first[0])
    assert [p.name for p in tmp_path.iterdir()] == [f"{counting.model_id}.npz"]


def test_unreadable_vector_cache_is_rebuilt(tmp_path: Path) -> None:
    counting = CountingEmbedder()
    (tmp_path / f"{counting.model_id}.npz").write_bytes(b"not a numpy file")
    vectors = VectorCache(tmp_path, counting).embed(["alpha tool"])
    assert counting.embedded == 1
    assert np.array_equal(vectors[0], counting.inner.embed(["alpha tool"])[0])
    VectorCache(tmp_path, counting).embed(["alpha tool"])
    assert counting.embedded == 1


def test_dense_default_index_caches_the_vectors_of_every_model(tmp_path: Path) -> None:
    index = default_index(cache_dir=tmp_path)
    index.upsert(CATALOG)
    assert names(index.search(["is it going to rain tomorrow"], limit=1)) == ["get_weather"]
    models = {f"{signal.embedder.model_id}.npz" for signal in dense_signals()}
    assert {p.name for p in tmp_path.glob("*.npz")} == models
    assert len(models) == 2  # the built-in table and WordLlama (the dev install has the extra)


def test_a_query_of_noise_words_matches_nothing_even_with_dense_signals() -> None:
    index = default_index()
    index.upsert(CATALOG)
    assert index.search(["xyzzy plugh"]) == []
    # A dictionary word the catalog lacks still finds tools by meaning.
    assert names(index.search(["umbrella"], limit=1)) == ["get_weather"]


def test_default_index_caches_vectors_in_the_cache_directory_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    default_index().upsert(CATALOG)
    models = {f"{signal.embedder.model_id}.npz" for signal in dense_signals()}
    assert {p.name for p in (tmp_path / "cache").iterdir()} == models


def test_an_empty_cache_directory_setting_turns_the_default_cache_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() is None
    index = default_index()
    assert isinstance(index, ToolIndex)
    assert not any(isinstance(s.embedder, VectorCache) for s in index.signals)
    index.upsert(CATALOG)
    assert names(index.search(["is it going to rain tomorrow"], limit=1)) == ["get_weather"]
    assert list(tmp_path.iterdir()) == []


def test_without_a_setting_vectors_go_to_the_user_cache_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "pegboard" / "vectors"
    default_index().upsert(CATALOG)
    assert len(list((tmp_path / "pegboard" / "vectors").glob("*.npz"))) == len(dense_signals())
    uncached = default_index(cache=False)
    assert isinstance(uncached, ToolIndex)
    assert not any(isinstance(s.embedder, VectorCache) for s in uncached.signals)


def test_an_unwritable_vector_cache_warns_and_still_embeds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    counting = CountingEmbedder()
    with caplog.at_level(logging.WARNING, logger="pegboard.search"):
        vectors = VectorCache(blocker / "vectors", counting).embed(["alpha tool"])
    assert np.array_equal(vectors[0], counting.inner.embed(["alpha tool"])[0])
    assert "cannot write the vector cache" in caplog.text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_saving_the_vector_cache_leaves_no_temporary_file(tmp_path: Path) -> None:
    VectorCache(tmp_path, CountingEmbedder()).embed(["alpha tool", "beta tool"])
    VectorCache(tmp_path, CountingEmbedder()).embed(["gamma tool"])
    assert [p.suffix for p in tmp_path.iterdir()] == [".npz"]
    assert len(VectorCache(tmp_path, CountingEmbedder())._load()) == 3


def test_the_vector_cache_keeps_at_most_max_rows_dropping_the_least_recent(
    tmp_path: Path,
) -> None:
    counting = CountingEmbedder()
    VectorCache(tmp_path, counting, max_rows=3).embed(["alpha", "beta", "gamma"])
    # beta comes back with a new text: the order is now alpha, gamma, beta, delta, and the
    # oldest, alpha, goes.
    VectorCache(tmp_path, counting, max_rows=3).embed(["beta", "delta"])
    assert counting.embedded == 4
    VectorCache(tmp_path, counting, max_rows=3).embed(["beta", "delta", "gamma"])
    assert counting.embedded == 4  # all three still cached
    VectorCache(tmp_path, counting, max_rows=3).embed(["alpha"])
    assert counting.embedded == 5  # alpha had been dropped for delta: embedded again
    cache = VectorCache(tmp_path, counting, max_rows=3)
    assert len(cache._load()) == 3
    # A read that embeds nothing does not rewrite the file, so gamma was still the oldest
    # row and made room for alpha; beta and delta stay.
    cache.embed(["beta", "delta"])
    assert counting.embedded == 5
    cache.embed(["gamma"])
    assert counting.embedded == 6

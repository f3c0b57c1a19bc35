"""The semantic extra's dense signal: WordLlama's static token embeddings.

``pip install 'pegboard[semantic]'`` adds `wordllama <https://github.com/dleemiller/WordLlama>`_
(MIT), whose wheel carries 256-dimension token embeddings trained for sentence similarity from
LLaMA-2's embedding table (16 MB) and the LLaMA-2 tokenizer. A text's vector is the normalised
mean of its tokens' rows, exactly as WordLlama embeds, so the model runs on numpy in microseconds
and nothing is downloaded at run time.

The two files are read straight from the installed package (``safetensors`` and ``tokenizers``
come with it) without importing ``wordllama`` itself: importing it configures the root logger,
and its loader looks for the tokenizer in a folder its wheel does not have, then tries to
download it from Hugging Face.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from pegboard.errors import OptionalDependencyMissing, SearchModelError
from pegboard.search.dense import Vectors, WordWeight, table_digest, unit_rows
from pegboard.search.wordpiece import basic_words

WEIGHTS = Path("weights") / "l2_supercat_256.safetensors"
TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
REINSTALL = "reinstall the semantic extra: pip install --force-reinstall 'pegboard[semantic]'"


def wordllama_dir() -> Path | None:
    """Where the installed ``wordllama`` package keeps its files (None when not installed)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def semantic_available() -> bool:
    """Whether the semantic extra is installed with the files this module reads."""
    root = wordllama_dir()
    return root is not None and (root / WEIGHTS).is_file() and (root / TOKENIZER).is_file()


class WordLlamaEmbedder:
    """Mean of WordLlama token vectors, normalised to unit length."""

    def __init__(self, directory: Path) -> None:
        weights, tokenizer = directory / WEIGHTS, directory / TOKENIZER
        for path in (weights, tokenizer):
            if not path.is_file():
                raise SearchModelError(f"the WordLlama model file {path} is missing; {REINSTALL}")
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise OptionalDependencyMissing("semantic tool search", "semantic") from exc
        try:
            table = load_file(str(weights)).get("embedding.weight")
            self._tokenizer = Tokenizer.from_file(str(tokenizer))
        except Exception as exc:  # safetensors and tokenizers raise their own error types
            raise SearchModelError(f"cannot read the WordLlama model: {exc}; {REINSTALL}") from exc
        if table is None or table.ndim != 2:
            raise SearchModelError(f"{weights} has no 2-D 'embedding.weight' table; {REINSTALL}")
        # Kept as stored (float16, 16 MB): the rows a text uses become float32 when it is
        # embedded; float16 -> float32 is exact, so the vectors are those of a float32 table.
        self._table = np.ascontiguousarray(table)
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self.dims = int(self._table.shape[1])
        digest = table_digest(self._rows, len(self._table))
        self.model_id = f"wordllama-l2-supercat-{self.dims}-{digest}"

    def _rows(self, ids: Any) -> Vectors:
        rows: Vectors = self._table[ids].astype(np.float32)
        return rows

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        for row, encoding in enumerate(encodings):
            if encoding.ids:
                out[row] = self._rows(encoding.ids).mean(0)
        return unit_rows(out)

    def embed_query(self, text: str, weight: WordWeight) -> Vectors:
        """The whole query as a text, or zeros when ``weight`` keeps none of its words.

        Weights only gate here: on the eval sets an IDF-weighted mean of WordLlama rows, or the
        mean of the kept words alone, ranked worse than the plain mean over the whole text.
        """
        if not any(weight(word) > 0 for word in basic_words(text)):
            return np.zeros(self.dims, dtype=np.float32)
        vector: Vectors = self.embed([text])[0]
        return vector


@cache
def shared_wordllama() -> WordLlamaEmbedder:
    """The process-wide WordLlama embedder (raises when the semantic extra is not installed)."""
    root = wordllama_dir()
    if root is None:
        raise OptionalDependencyMissing("semantic tool search", "semantic")
    return WordLlamaEmbedder(root)

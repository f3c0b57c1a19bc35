"""The semantic extra's dense signal: WordLlama's static token embeddings.


``pip install 'pegboard[semantic]'`` adds `wordllama <https://github.com/dleemiller/WordLlama>`_
(MIT), whose wheel carries 256-dimension token embeddings trained for sentence similarity from
LLaMA-2's embedding table (16 MB) and the LLaMA-2 tokenizer. A text's vector is the normalised
mean of its tokens' rows, exactly as WordLlama embeds, so the model runs on numpy in microseconds
and nothing is downloaded at run time.

The two files are read straight from the installed package without importing ``wordllama``
itself: importing it configures the root logger, and its loader looks for the tokenizer in a
folder its wheel does not have, then tries to download it from Hugging Face. The tokenizer file
is read by :mod:`pegboard.search.llama_bpe` (the same ids as ``tokenizers``, a quarter of its
memory).
"""

from __future__ import annotations

import importlib.util
import json
import mmap
import struct
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard.errors import OptionalDependencyMissing, SearchModelError
from pegboard.search.dense import WordWeight, table_digest, unit, unit_rows
from pegboard.search.llama_bpe import LlamaBPE
from pegboard.search.pages import keep as keep_pages
from pegboard.search.tables import CODES, Table
from pegboard.search.vocab import BULK_TEXTS, remembered_digest
from pegboard.search.wordpiece import basic_words

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pegboard.search.dense import Vectors
else:  # numpy loads on first use: a small stored index is ranked without it (search.flat)
    from pegboard._lazy import LazyModule

    np = LazyModule("numpy")

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
            table = mapped_tensor(weights, "embedding.weight")
            self._tokenizer = LlamaBPE.from_file(tokenizer)
        except (OSError, ValueError, KeyError) as exc:
            raise SearchModelError(f"cannot read the WordLlama model: {exc}; {REINSTALL}") from exc
        # Kept as stored (float16, 16 MB) and mapped, not read: only the rows texts use become
        # resident, as float32 when a text is embedded; float16 -> float32 is exact, so the
        # vectors are those of a float32 table.
        self._table = table
        self.dims = self._table.dims
        digest = remembered_digest([weights], lambda: table_digest(self._rows, self._table.rows))
        self.model_id = f"wordllama-l2-supercat-{self.dims}-{digest}"

    def _rows(self, ids: Any) -> Vectors:
        rows: Vectors = self._array()[ids].astype(np.float32)
        return rows

    @cache  # noqa: B019 - one embedder per process (shared_wordllama)
    def _array(self) -> npt.NDArray[np.float16]:
        return self._table.array()

    def embed(self, texts: Sequence[str]) -> Vectors:
        tokenizer = self._tokenizer.bulk() if len(texts) >= BULK_TEXTS else self._tokenizer
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = tokenizer.encode(text)
            if ids:
                out[row] = self._rows(ids).mean(0)
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

    def query_vector(self, text: str, weight: WordWeight) -> list[float]:
        """:meth:`embed_query` in plain Python (float64 sums of the same rows)."""
        vector = [0.0] * self.dims
        if not any(weight(word) > 0 for word in basic_words(text)):
            return vector
        ids = self._tokenizer.encode(text)
        if not ids:
            return vector
        rows = [self._table.row(i) for i in ids]
        return unit([sum(column) / len(ids) for column in zip(*rows, strict=True)])


_DTYPES = {"F16": "<f2", "F32": "<f4", "BF16": None}


def mapped_tensor(path: Path, name: str) -> Table:
    """Tensor ``name`` of a safetensors file, memory-mapped read-only.

    The format is an 8-byte little-endian header length, a JSON header naming each tensor's
    dtype, shape and byte range, then the data (https://github.com/huggingface/safetensors);
    ``safetensors.numpy.load_file`` would copy every tensor into memory.
    """
    with path.open("rb") as f:
        head = f.read(8)
        (length,) = struct.unpack("<Q", head) if len(head) == 8 else (-1,)
        if not 0 < length <= path.stat().st_size - 8:
            raise ValueError(f"{path} is not a safetensors file")
        header = json.loads(f.read(length))
        spec = header.get(name)
        if not isinstance(spec, dict):
            raise ValueError(f"{path} has no {name!r} tensor")
        dtype = _DTYPES.get(spec["dtype"])
        shape = tuple(int(n) for n in spec["shape"])
        if dtype is None or len(shape) != 2:
            raise ValueError(f"{path}: {name!r} is not a 2-D float16/float32 table")
        begin, end = (int(n) for n in spec["data_offsets"])
        if end - begin != shape[0] * shape[1] * struct.calcsize(CODES[dtype]):
            raise ValueError(f"{path}: {name!r} has {end - begin} bytes for shape {shape}")
        pages = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    keep_pages(pages)  # unmapped after each search
    return Table(pages, 8 + length + begin, shape[0], shape[1], dtype)


@cache
def shared_wordllama() -> WordLlamaEmbedder:
    """The process-wide WordLlama embedder (raises when the semantic extra is not installed)."""
    root = wordllama_dir()
    if root is None:
        raise OptionalDependencyMissing("semantic tool search", "semantic")
    return WordLlamaEmbedder(root)

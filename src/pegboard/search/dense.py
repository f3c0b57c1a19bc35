"""The dense signal: static word-piece embeddings distilled from all-MiniLM-L6-v2.

A text's vector is the normalised mean of its word pieces' rows (model2vec style), so embedding
a query costs microseconds and nothing is downloaded or executed at run time. The table ships
with pegboard (``static_minilm/``, int8 with one scale per row, made by
``scripts/distill_static_model.py``). Catalog vectors can be cached on disk, keyed by a hash of
the embedded text and the model, so an unchanged tool is never embedded twice.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pegboard.search.tables import npy_table
from pegboard.search.vocab import BULK_TEXTS, cached_vocabulary, remembered_digest
from pegboard.search.wordpiece import WordPiece, basic_words

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]
else:  # numpy loads on first use: a small stored index is ranked without it (search.flat)
    from pegboard._lazy import LazyModule

    np = LazyModule("numpy")

logger = logging.getLogger("pegboard.search")

MODEL_DIR = Path(__file__).resolve().parent / "static_minilm"


WordWeight = Callable[[str], float]


class Embedder(Protocol):
    """Texts -> unit vectors (rows); ``model_id`` names the vector space for caches."""

    model_id: str
    dims: int

    def embed(self, texts: Sequence[str]) -> Vectors: ...

    def embed_query(self, text: str, weight: WordWeight) -> Vectors:
        """One unit vector for ``text``, each word's pieces scaled by ``weight(word)``."""
        ...

    def query_vector(self, text: str, weight: WordWeight) -> Sequence[float]:
        """:meth:`embed_query` as Python numbers, computed without numpy."""
        ...


def unit_rows(rows: Vectors) -> Vectors:
    """``rows`` scaled to unit length (all-zero rows, texts with no known word, stay zero)."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: Vectors = rows / norms
    return unit


def table_digest(rows: Callable[[slice], Vectors], count: int) -> str:
    """sha256 (12 hex) of a float32 table's bytes, read ``rows`` by chunk (no full copy)."""
    digest = hashlib.sha256()
    for start in range(0, count, 4096):
        digest.update(np.ascontiguousarray(rows(slice(start, start + 4096))).tobytes())
    return digest.hexdigest()[:12]


class StaticEmbedder:
    """Mean of static word-piece vectors, normalised to unit length.

    The table stays as shipped (int8 and a float32 scale per row, 7.8 MB); the rows a text
    uses are scaled to float32 when it is embedded, the same arithmetic as scaling the whole
    table up front (31 MB resident) and the same vectors.
    """

    def __init__(self, model_dir: Path = MODEL_DIR) -> None:
        vocab_file = model_dir / "vocab.txt"

        def pieces() -> Iterator[tuple[str, int]]:
            with vocab_file.open(encoding="utf-8") as f:
                for i, line in enumerate(f):
                    yield line.rstrip("\n"), i

        self._tokenizer = WordPiece(cached_vocabulary(vocab_file, pieces, "minilm"))
        table = model_dir / "embeddings.npy"
        # Mapped, not read: only the rows texts use become resident.
        self._table = npy_table(table)
        self._scales = npy_table(model_dir / "scales.npy", mapped=False).values()
        self.dims = self._table.dims
        files = [table, model_dir / "scales.npy"]
        digest = remembered_digest(files, lambda: table_digest(self._rows, self._table.rows))
        self.model_id = f"static-minilm-{self.dims}-{digest}"

    @property
    def vocab(self) -> Mapping[str, int]:
        """Word piece -> row of the table."""
        return self._tokenizer.vocab

    def _rows(self, ids: Any) -> Vectors:
        int8, scales = self._arrays()
        rows: Vectors = int8[ids].astype(np.float32) * scales[ids]
        return rows

    @cache  # noqa: B019 - one embedder per process (shared_embedder)
    def _arrays(self) -> tuple[npt.NDArray[np.int8], Vectors]:
        """The table and its scales (a column) for numpy: what a bulk embedding reads."""
        scales = np.asarray(self._scales, dtype=np.float32)[:, None]
        return self._table.array(), scales

    def embed(self, texts: Sequence[str]) -> Vectors:
        tokenizer = self._tokenizer.bulk() if len(texts) >= BULK_TEXTS else self._tokenizer
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = tokenizer.encode(text)
            if ids:
                out[row] = self._rows(ids).mean(0)
        return unit_rows(out)

    def _weighted(self, text: str, weight: WordWeight) -> tuple[list[int], list[float]]:
        """The table rows of ``text``'s word pieces and each one's weight (its word's)."""
        rows: list[int] = []
        weights: list[float] = []
        for word in basic_words(text):
            pieces = self._tokenizer.pieces(word)
            w = weight(word) if pieces else 0.0
            if w > 0:
                rows.extend(pieces)
                weights.extend([w] * len(pieces))
        return rows, weights

    def embed_query(self, text: str, weight: WordWeight) -> Vectors:
        rows, weights = self._weighted(text, weight)
        if not rows:
            return np.zeros(self.dims, dtype=np.float32)
        vector = np.asarray(weights, dtype=np.float32) @ self._rows(rows)
        norm = float(np.linalg.norm(vector))
        unit: Vectors = vector / norm if norm > 0 else vector
        return unit

    def query_vector(self, text: str, weight: WordWeight) -> list[float]:
        """:meth:`embed_query` in plain Python (float64 sums of the same rows)."""
        vector = [0.0] * self.dims
        for piece, w in zip(*self._weighted(text, weight), strict=True):
            scale = self._scales[piece]
            vector = [
                v + w * (x * scale) for v, x in zip(vector, self._table.row(piece), strict=True)
            ]
        return unit(vector)


def unit(vector: list[float]) -> list[float]:
    """``vector`` scaled to unit length (a zero vector stays zero)."""
    norm = math.sqrt(math.fsum(v * v for v in vector))
    return [v / norm for v in vector] if norm > 0 else vector


class Dictionary(AbstractSet[str]):
    """The whole (lower-case) words of a word-piece vocabulary, read from the vocabulary
    itself (a second set of its 20,000 words would take 4 MB)."""

    def __init__(self, vocab: Mapping[str, int]) -> None:
        self._vocab = vocab

    def __contains__(self, word: object) -> bool:
        # Continuation pieces (``##ing``) and markers (``[UNK]``) are not alphabetic.
        return isinstance(word, str) and word.isalpha() and word in self._vocab

    def __iter__(self) -> Iterator[str]:
        return (w for w in self._vocab if w.isalpha())

    def __len__(self) -> int:
        return sum(1 for _ in self)


@cache
def dictionary() -> Dictionary:
    """The whole (lower-case) words of the static model's vocabulary: words a person might
    type, as opposed to noise such as ``xyzzy`` that only splits into fragments."""
    return Dictionary(shared_embedder().vocab)


@cache
def shared_embedder() -> StaticEmbedder:
    """The process-wide embedder (the table is loaded once)."""
    return StaticEmbedder()


# Vectors kept per model in a vector cache (about 100 MB at 256 float32 dimensions).
MAX_CACHED_ROWS = 100_000


class VectorCache:
    """An :class:`Embedder` that keeps catalog vectors on disk, keyed by text hash.

    One ``<model_id>.npz`` file per model under ``directory``; it is rewritten atomically when
    new texts were embedded, so an unchanged tool is embedded once across processes. It keeps
    at most ``max_rows`` vectors (1 KiB each for the shipped models): when it would hold more,
    the rows that the fewest recent catalogs asked for go first.
    """

    def __init__(
        self, directory: Path, embedder: Embedder, *, max_rows: int = MAX_CACHED_ROWS
    ) -> None:
        self._path = directory / f"{embedder.model_id}.npz"
        self._max_rows = max_rows
        self._embedder = embedder
        self.model_id = embedder.model_id
        self.dims = embedder.dims
        self._rows: dict[str, Vectors] | None = None

    def _load(self) -> dict[str, Vectors]:
        if self._rows is None:
            self._rows = {}
            try:
                with np.load(self._path) as stored:
                    keys, vectors = stored["keys"], stored["vectors"]
                self._rows = {str(k): v for k, v in zip(keys, vectors, strict=True)}
            except (OSError, ValueError, KeyError) as exc:
                if self._path.exists():
                    logger.warning("ignoring unreadable vector cache %s: %s", self._path, exc)
        return self._rows

    def embed_query(self, text: str, weight: WordWeight) -> Vectors:
        return self._embedder.embed_query(text, weight)

    def query_vector(self, text: str, weight: WordWeight) -> Sequence[float]:
        return self._embedder.query_vector(text, weight)

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows = self._load()
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        missing = sorted({i for i, key in enumerate(keys) if key not in rows})
        if missing:
            fresh = self._embedder.embed([texts[i] for i in missing])
            for i, row in zip(missing, fresh, strict=True):
                rows[keys[i]] = row
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, key in enumerate(keys):
            out[i] = rows[key]
        if missing:
            for key in keys:  # this catalog's rows move to the young end of the order
                rows[key] = rows.pop(key)
            for key in list(rows)[: max(0, len(rows) - self._max_rows)]:
                del rows[key]
            self._save(rows)
        return out

    def _save(self, rows: dict[str, Vectors]) -> None:
        tmp: Path | None = None
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            # A file of our own, so processes saving at once never interleave their writes.
            fd, name = tempfile.mkstemp(dir=self._path.parent, suffix=".tmp")
            tmp = Path(name)
            with os.fdopen(fd, "wb") as f:
                np.savez(f, keys=np.array(list(rows)), vectors=np.stack(list(rows.values())))
            tmp.replace(self._path)
        except OSError as exc:
            logger.warning("cannot write the vector cache %s: %s", self._path, exc)
            if tmp is not None:
                tmp.unlink(missing_ok=True)

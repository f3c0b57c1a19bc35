"""Train a query-side linear adapter for the MiniLM-L6 encoder on Debian documentation.

    .venv/bin/python scripts/train_query_adapter.py pairs WORK      # (query, passage) pairs
    .venv/bin/python scripts/train_query_adapter.py embed WORK      # their MiniLM vectors
    .venv/bin/python scripts/train_query_adapter.py train WORK OUT.npy [--epochs N ...]

The adapter is a 384 x 384 matrix ``W = I + A`` applied to a question's vector before it is
scored against stored chunk vectors (``normalise(W q)``): stored vectors stay valid and a query
costs one small product. It is trained with an in-batch-negative contrastive loss (InfoNCE) on
frozen vectors, in numpy, ``A`` starting at zero and kept near it by weight decay.

Training text (never python3-doc, whose library reference bench/kb.py measures on), from these
Debian packages (install them with ``apt-get install``):

- man pages of sections 1-8 under /usr/share/man (``manpages``, ``manpages-dev`` and whatever
  else is installed; pages of python3-doc and python3.11-doc are skipped): the NAME line's
  description ("sleep for a specified number of seconds") -> the page's DESCRIPTION;
- ``perl-doc``'s perlfaq1-9: each question heading -> its answer's prose;
- ``postgresql-doc-15``, ``debian-reference-en``, ``bash-doc`` HTML: each section heading
  (numbering removed) -> its text, the page's title above it, as ``pegboard kb add`` chunks it.

The passages never repeat their query (a NAME line or a heading is left out of its passage), so
a pair is a paraphrase to learn, not a word to match. Each package's licence is in its
/usr/share/doc/PACKAGE/copyright (man-pages: various free licences; perl: Artistic or GPL;
PostgreSQL: the PostgreSQL licence; debian-reference: GPL-2+; bash: GFDL/GPL-3+); the adapter
is a statistic of their text, not a copy of it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

MAN_SECTIONS = ("1", "2", "3", "5", "7", "8")
MAN_ROOT = Path("/usr/share/man")
PERLFAQ = Path("/usr/share/perl/5.36/pod")
HTML_ROOTS = (
    ("postgresql-doc-15", Path("/usr/share/doc/postgresql-doc-15/html")),
    ("debian-reference-en", Path("/usr/share/debian-reference")),
    ("bash-doc", Path("/usr/share/doc/bash")),
)
EXCLUDED_PACKAGES = ("python3-doc", "python3.11-doc")
PASSAGE_CHARS = 1200  # pegboard's chunk size
MIN_QUERY_WORDS = 3
_SPACE = re.compile(r"\s+")
_NUMBERED = re.compile(r"^(?:[A-Z]?\d+(?:\.\d+)*\.?|Chapter \d+\.|Appendix [A-Z]\.)\s+")


def _flat(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _words(text: str) -> int:
    return len(text.split())


def _excluded_files() -> set[str]:
    out: set[str] = set()
    for package in EXCLUDED_PACKAGES:
        listing = Path(f"/var/lib/dpkg/info/{package}.list")
        if listing.exists():
            out.update(listing.read_text().splitlines())
    return out


def man_pairs(limit_section1: int) -> list[tuple[str, str, str]]:
    """(source, query, passage) per man page: NAME's description -> its DESCRIPTION."""
    excluded = _excluded_files()
    env = {**os.environ, "MANWIDTH": "2000", "LANG": "C.UTF-8"}
    out: list[tuple[str, str, str]] = []
    for section in MAN_SECTIONS:
        pages = sorted(p for p in (MAN_ROOT / f"man{section}").iterdir() if str(p) not in excluded)
        if section == "1":
            pages = pages[:: max(1, len(pages) // limit_section1)]
        for page in pages:
            try:
                raw = subprocess.run(
                    ["man", "--nj", "--nh", "-l", str(page)],
                    capture_output=True,
                    env=env,
                    timeout=20,
                    check=False,
                ).stdout.decode("utf-8", "replace")
            except subprocess.TimeoutExpired:
                continue
            fields = _man_sections(raw)
            name, description = fields.get("NAME", ""), fields.get("DESCRIPTION", "")
            if " - " not in name or not description:
                continue
            names, summary = name.split(" - ", 1)
            summary = _flat(summary)
            if _words(summary) < MIN_QUERY_WORDS or not _prose(description):
                continue
            first = _flat(names.split(",")[0])
            passage = f"{first}({section}) › DESCRIPTION\n{_cut(description)}"
            out.append((f"man{section}", summary, passage))
    return out


def _man_sections(rendered: str) -> dict[str, str]:
    """A rendered page's sections (a line at column 0 in capitals heads one)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in rendered.splitlines()[1:]:
        if line and not line[0].isspace():
            heading = line.strip()
            if heading.upper() == heading and len(heading) < 40:
                current = sections.setdefault(heading, [])
                continue
        if current is not None:
            current.append(line.strip())
    return {k: "\n".join(v).strip() for k, v in sections.items()}


_SENTENCE = re.compile(r"[A-Za-z][^.!?]*(?:\s+\S+){7,}[.!?](?:\s|$)")


def _wordy(heading: str) -> bool:
    """Whether most of ``heading``'s tokens are words (not a command line shown as a heading)."""
    tokens = heading.split()
    return sum(t.strip(",.:;()?'").isalpha() for t in tokens) >= 0.7 * len(tokens)


def _prose(text: str) -> bool:
    """Whether ``text`` has a sentence of 8 or more words (not a table of contents or index)."""
    return _SENTENCE.search(text) is not None


def _cut(text: str) -> str:
    """Paragraphs of ``text`` (flattened) up to PASSAGE_CHARS."""
    out = ""
    for paragraph in re.split(r"\n\s*\n", text):
        flat = _flat(paragraph)
        if not flat:
            continue
        if out and len(out) + len(flat) + 2 > PASSAGE_CHARS:
            break
        out = f"{out}\n\n{flat}" if out else flat
    return out[:PASSAGE_CHARS]


_POD_CODE = re.compile(r"[A-Z]<<+\s(.*?)\s>>+|[A-Z]<([^<>]*)>")


def _pod_text(text: str) -> str:
    for _ in range(3):
        text = _POD_CODE.sub(lambda m: (m.group(1) or m.group(2) or "").split("|")[-1], text)
    return text


def perlfaq_pairs() -> list[tuple[str, str, str]]:
    """(source, question, answer) for every =head2 question of perlfaq1-9."""
    out: list[tuple[str, str, str]] = []
    for pod in sorted(PERLFAQ.glob("perlfaq[1-9].pod")):
        blocks = re.split(r"\n(?==head\d )", pod.read_text(encoding="utf-8", errors="replace"))
        for block in blocks:
            if not block.startswith("=head2 "):
                continue
            head, _, body = block.partition("\n")
            question = _flat(_pod_text(head.removeprefix("=head2 ")))
            prose = [
                _flat(_pod_text(p))
                for p in re.split(r"\n\s*\n", body)
                if p.strip() and not p[:1].isspace() and not p.startswith("=")
            ]
            answer = _cut("\n\n".join(p for p in prose if p))
            if _words(question) >= MIN_QUERY_WORDS and _words(answer) >= 10:
                out.append((pod.stem, question, f"{pod.stem}\n{answer}"))
    return out


def html_pairs() -> list[tuple[str, str, str]]:
    """(package, heading, section text under the page's title) for the HTML manuals."""
    from pegboard.errors import KnowledgeBaseError
    from pegboard.kb.extract import extract

    out: list[tuple[str, str, str]] = []
    for package, root in HTML_ROOTS:
        for page in sorted(root.rglob("*.htm*")):
            try:
                doc = extract(page.read_bytes(), page)
            except KnowledgeBaseError:  # a page the extractor refuses (too large, XML entities)
                continue
            for section in doc.sections:
                heading = _NUMBERED.sub("", _flat(section.heading))
                text = _cut(section.text)
                if _words(heading) < MIN_QUERY_WORDS or _words(text) < 10 or not _wordy(heading):
                    continue
                if heading == doc.title or doc.title.startswith(heading) or not _prose(text):
                    continue
                out.append((package, heading, f"{_NUMBERED.sub('', doc.title)}\n{text}"))
    return out


def build_pairs(work: Path, limit_section1: int) -> None:
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rows = perlfaq_pairs() + html_pairs() + man_pairs(limit_section1)
    seen: set[str] = set()
    kept = []
    for source, query, passage in rows:
        key = query.lower()
        if key in seen:
            continue
        seen.add(key)
        kept.append((source, query, passage))
    with (work / "pairs.jsonl").open("w", encoding="utf-8") as f:
        for source, query, passage in kept:
            f.write(json.dumps({"source": source, "query": query, "passage": passage}) + "\n")
    counts: dict[str, int] = {}
    for source, _, _ in kept:
        key = "man" if source.startswith("man") else "perlfaq" if "faq" in source else source
        counts[key] = counts.get(key, 0) + 1
    print(f"{len(kept)} pairs in {time.perf_counter() - started:.0f} s: {counts}")


_TOKEN = re.compile(r"[a-z0-9]+")


def _overlap(query: str, passage: str) -> float:
    """The share of ``query``'s distinct words (of 3+ letters) that ``passage`` also has."""
    words = {w for w in _TOKEN.findall(query.lower()) if len(w) > 2}
    if not words:
        return 0.0
    return len(words & set(_TOKEN.findall(passage.lower()))) / len(words)


def load_pairs(work: Path) -> list[dict[str, str]]:
    lines = (work / "pairs.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def embed_pairs(work: Path) -> None:
    """Queries as kb_search embeds a question (float32), passages as ingest embeds a chunk."""
    from pegboard.search.encoder import shared_encoder

    pairs = load_pairs(work)
    encoder = shared_encoder()
    started = time.perf_counter()
    queries = np.stack([encoder.embed_query(p["query"], lambda w: 1.0) for p in pairs])
    print(f"{len(pairs)} queries in {time.perf_counter() - started:.0f} s", flush=True)
    passages = np.zeros((len(pairs), encoder.dims), dtype=np.float32)
    step = 256
    for start in range(0, len(pairs), step):
        part = pairs[start : start + step]
        passages[start : start + len(part)] = encoder.embed([p["passage"] for p in part])
        print(f"  {start + len(part)} passages, {time.perf_counter() - started:.0f} s", flush=True)
    np.savez(work / "vectors.npz", queries=queries.astype(np.float32), passages=passages)


def train(
    queries: np.ndarray,
    passages: np.ndarray,
    *,
    epochs: int,
    batch: int,
    lr: float,
    decay: float,
    temperature: float,
    seed: int = 0,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """``W = I + A`` minimising in-batch InfoNCE of ``normalise(q W^T)`` against passages.

    With ``groups`` (a label per pair) each batch is drawn from one group: the negatives are
    pages of the same manual, harder than pages of another."""
    rng = np.random.default_rng(seed)
    dims = queries.shape[1]
    a = np.zeros((dims, dims), dtype=np.float64)
    m = np.zeros_like(a)
    v = np.zeros_like(a)
    step = 0
    eye = np.eye(dims)
    batch = min(batch, len(queries))
    for epoch in range(epochs):
        batches = _batches(rng, len(queries), batch, groups)
        total = 0.0
        for idx in batches:
            q = queries[idx].astype(np.float64)
            d = passages[idx].astype(np.float64)
            w = eye + a
            u = q @ w.T
            norm = np.linalg.norm(u, axis=1, keepdims=True)
            qn = u / norm
            logits = qn @ d.T / temperature
            logits -= logits.max(1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(1, keepdims=True)
            total += float(-np.log(p[np.arange(len(idx)), np.arange(len(idx))] + 1e-12).mean())
            g_logits = p.copy()
            g_logits[np.arange(len(idx)), np.arange(len(idx))] -= 1.0
            g_logits /= len(idx) * temperature
            g_qn = g_logits @ d
            g_u = (g_qn - qn * (g_qn * qn).sum(1, keepdims=True)) / norm
            grad = g_u.T @ q + decay * a
            step += 1
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad * grad
            a -= lr * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
        print(f"  epoch {epoch + 1}: loss {total / max(1, len(batches)):.4f}", flush=True)
    return (eye + a).astype(np.float32)


def _batches(
    rng: np.random.Generator, n: int, batch: int, groups: np.ndarray | None
) -> list[np.ndarray]:
    """Shuffled batches of ``batch`` indices (each within one group when ``groups`` is given;
    a group smaller than a batch is one batch)."""
    if groups is None:
        order = rng.permutation(n)
        return [order[s : s + batch] for s in range(0, n - batch + 1, batch)]
    out: list[np.ndarray] = []
    for label in np.unique(groups):
        members = rng.permutation(np.flatnonzero(groups == label))
        size = min(batch, len(members))
        out += [members[s : s + size] for s in range(0, len(members) - size + 1, size)]
    return [out[i] for i in rng.permutation(len(out))]


def recall(queries: np.ndarray, passages: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """recall@1 and mean reciprocal rank of each query's own passage among ``passages``."""
    u = queries @ w.T
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    sims = u @ passages.T
    own = sims[np.arange(len(sims)), np.arange(len(sims))]
    ranks = (sims > own[:, None]).sum(1) + 1
    return float((ranks == 1).mean()), float((1.0 / ranks).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=("pairs", "embed", "train"))
    parser.add_argument("work", type=Path)
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--section1", type=int, default=3000, help="man(1) pages sampled")
    parser.add_argument("--sources", default="", help="comma list: man,perlfaq,<package>")
    parser.add_argument(
        "--max-overlap",
        type=float,
        default=1.0,
        help="drop pairs whose passage already holds more than this share of the query's words",
    )
    parser.add_argument(
        "--val", type=float, default=0.0, help="share of pairs held out to report recall on"
    )
    parser.add_argument(
        "--by-source", action="store_true", help="draw each batch from one source's pairs"
    )
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--decay", type=float, default=1e-2)
    parser.add_argument("--temperature", type=float, default=0.05)
    args = parser.parse_args()
    if args.stage == "pairs":
        build_pairs(args.work, args.section1)
    elif args.stage == "embed":
        embed_pairs(args.work)
    else:
        if args.out is None:
            sys.exit("train needs OUT.npy: where to write the adapter")
        with np.load(args.work / "vectors.npz") as stored:
            queries, passages = stored["queries"], stored["passages"]
        pairs = load_pairs(args.work)
        wanted = set(args.sources.split(",")) if args.sources else None
        keep = [
            i
            for i, p in enumerate(pairs)
            if _overlap(p["query"], p["passage"]) <= args.max_overlap
            and (
                wanted is None
                or p["source"] in wanted
                or ("man" in wanted and p["source"].startswith("man"))
                or ("perlfaq" in wanted and p["source"].startswith("perlfaq"))
            )
        ]
        queries, passages = queries[keep], passages[keep]
        held = np.zeros(len(queries), dtype=bool)
        if args.val > 0:
            held[
                np.random.default_rng(1).permutation(len(queries))[: int(args.val * len(queries))]
            ] = True
        print(f"training on {int((~held).sum())} pairs", flush=True)
        sources = np.asarray([pairs[i]["source"] for i in keep])
        w = train(
            queries[~held],
            passages[~held],
            groups=sources[~held] if args.by_source else None,
            epochs=args.epochs,
            batch=args.batch,
            lr=args.lr,
            decay=args.decay,
            temperature=args.temperature,
        )
        if held.any():
            for label, matrix in (("identity", np.eye(len(w), dtype=np.float32)), ("adapter", w)):
                r1, mrr = recall(queries[held], passages[held], matrix)
                share = f"held-out pairs ({int(held.sum())}), {label}"
                print(f"  {share}: recall@1 {r1:.3f}, MRR {mrr:.3f}")
        np.save(args.out, w)
        moved = float(np.linalg.norm(w - np.eye(len(w))))
        print(f"wrote {args.out} ({w.shape[0]}x{w.shape[1]}, |W - I| = {moved:.3f})")


if __name__ == "__main__":
    main()

"""The link graph as a document prior (and two page-level signals), on a python3-doc store
(issue 28).

    .venv/bin/python bench/kb.py --keep DIR --skip-speed   # builds DIR/pydoc-minilm-l6.sqlite3
    .venv/bin/python bench/kb_prior.py DIR/pydoc-minilm-l6.sqlite3 [--priors indegree,pagerank]
        (or propagation, superseded, share, idf)
        [--weights 0,tie,0.05,0.1,0.2] [--sources base|docs] [--clip none|positive|negative]
        [--no-deprecated] [--held-out PRIOR,W] [--notes] [--moves]

Measured in session 17 and not adopted (bench/RESULTS.md): nothing here is in the library.
A page many other pages link to is a hub (the live module people mean); a superseded one
(optparse, imp, getopt) is linked to by few. Each document gets a prior from the links between
the pages (read as bench/kb_anchors.py reads them: each page's main region, relative targets
resolved against its folder, ``#fragment`` and ``?query`` cut, web and root-relative targets
and self-links left out; a linking page counts once per target):

- ``indegree``: log(1 + the number of distinct pages linking to the document);
- ``pagerank``: log of the document's PageRank over the same graph (damping 0.85, a page
  without links spreading its rank over every page, 100 iterations);

z-scored over the base's documents (``--clip positive``: negatives as 0, a boost only;
``--clip negative``: positives as 0, a demotion only), then added to kb_search's own fused
per-document score at weight ``W`` (through the title term, before the deprecated factor), for
the store's base only. Weight ``tie`` is a tie-break only (1e-9). Two more kinds:

- ``propagation`` (query-dependent): ``W`` x the z-score, over the documents found, of the sum
  of the scores (over the best's) of the ``PROPAGATE`` best documents that link to the
  document (a page the other good answers point at);
- ``superseded``: kb_search's deprecated factor also on a document whose first chunk's first
  three paragraphs hold "deprecated", "superseded" or "legacy" anywhere (kb_search's own rule:
  a paragraph that starts with "Deprecated"); ``W`` is unused.
- ``share`` / ``idf`` (query-dependent, not from links): the share of the question's distinct
  words (kb_search's own: lower case, stopwords out; Porter-stemmed, as the FTS5 index stems
  them) found among the document's stemmed words (every chunk's title and text), plain or each
  word weighted by its idf over the base's documents (log(N / document frequency)); ``W`` x its
  z-score over the documents kb_search collected for the question. kb_search ranks chunks, so
  no other term sees the page as a whole against the question's words.

``--sources docs`` also counts links from every other HTML page of python3-doc (tutorial,
howto, FAQ, What's New, ...; never indexed): a bench variant the library could not build from
a base's own pages. ``--no-deprecated`` sets kb_search's deprecated factor to 1 (can the prior
replace it?). Dev questions (bench/kb_pydoc/questions.tsv) by default: hit@1, hit@3, MRR@20;
``--held-out PRIOR,W`` scores that one setting and the default on both held-out sets (look
once); ``--notes`` the notes set (Markdown and HTML; no file links between notes, so the prior
is 0 and must not move them); ``--moves`` prints each dev question whose rank changes.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import kb_quality as quality
from kb_anchors import PYDOC, figures, page_links, ranks, targets
from pegboard.kb import ingest
from pegboard.kb import search as kb_search
from pegboard.kb.embedding import MINILM_L6
from pegboard.kb.search import Hit

DAMPING = 0.85
_PARAGRAPHS = re.compile(r"\n\s*\n")
_WORD = re.compile(r"\w+", re.UNICODE)
_SUPERSEDED = re.compile(r"\b(deprecated|superseded|legacy)\b", re.IGNORECASE)
PROPAGATE = 20  # the best documents whose links propagate their scores
TIE = 1e-9


def graph(db: Path, library: Path | None) -> tuple[dict[int, set[int]], list[int]]:
    """The documents of ``db`` and, for each, the set of pages linking to it (page ids; pages
    outside the base, read when ``library`` is given, get negative ids)."""
    conn = sqlite3.connect(db)
    documents = {str(s): int(i) for i, s in conn.execute("SELECT id, source FROM documents")}
    conn.close()
    pages = dict(documents)
    if library is not None:
        extra = sorted(
            p
            for p in library.parent.rglob("*.html")
            if library not in p.parents and not p.name.startswith("_")
        )
        for number, page in enumerate(extra, start=1):
            pages[os.path.realpath(page)] = -number
    incoming: dict[int, set[int]] = {i: set() for i in documents.values()}
    for source, origin in pages.items():
        if source.endswith((".md", ".markdown")):
            continue  # the notes' Markdown: no file links between notes
        for target, _ in targets(page_links(Path(source), False), source):
            found = documents.get(target)
            if found is not None and found != origin:
                incoming[found].add(origin)
    return incoming, sorted(pages.values())


def pagerank(incoming: Mapping[int, set[int]], pages: list[int]) -> dict[int, float]:
    """PageRank of every page of ``pages`` over the links ``incoming`` names."""
    outdegree = dict.fromkeys(pages, 0)
    for sources in incoming.values():
        for s in sources:
            outdegree[s] += 1
    n = len(pages)
    rank = dict.fromkeys(pages, 1.0 / n)
    for _ in range(100):
        dangling = sum(rank[p] for p in pages if not outdegree[p])
        base = (1 - DAMPING) / n + DAMPING * dangling / n
        rank = {
            p: base + DAMPING * sum(rank[s] / outdegree[s] for s in incoming.get(p, ()))
            for p in pages
        }
    return rank


def zscores(values: Mapping[int, float], clip: str) -> dict[int, float]:
    n = len(values)
    mean = sum(values.values()) / n if n else 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in values.values()) / n) if n else 0.0
    if sd <= 1e-12:
        return dict.fromkeys(values, 0.0)
    out = {d: (v - mean) / sd for d, v in values.items()}
    if clip == "positive":
        return {d: max(z, 0.0) for d, z in out.items()}
    return {d: min(z, 0.0) for d, z in out.items()} if clip == "negative" else out


def priors(db: Path, library: Path | None, clip: str) -> dict[str, dict[int, float]]:
    """Each prior's z-score per document of ``db``."""
    incoming, pages = graph(db, library)
    rank = pagerank(incoming, pages)
    return {
        "indegree": zscores({d: math.log1p(len(s)) for d, s in incoming.items()}, clip),
        "pagerank": zscores({d: math.log(rank[d]) for d in incoming}, clip),
    }


def sources(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return {str(s): int(i) for i, s in conn.execute("SELECT id, source FROM documents")}
    finally:
        conn.close()


class Coverage:
    """Each document's Porter-stemmed words (every chunk's title and text) and the words' idf
    over the store's documents, for the kinds ``share`` and ``idf``."""

    def __init__(self, db: Path) -> None:
        import Stemmer

        self.stem = Stemmer.Stemmer("porter").stemWord
        conn = sqlite3.connect(db)
        words: dict[int, set[str]] = {}
        for document, title, text in conn.execute("SELECT document, title, text FROM chunks"):
            words.setdefault(int(document), set()).update(_WORD.findall(f"{title}\n{text}".lower()))
        conn.close()
        self.words = {d: {self.stem(w) for w in ws} for d, ws in words.items()}
        frequency: dict[str, int] = {}
        for ws in self.words.values():
            for w in ws:
                frequency[w] = frequency.get(w, 0) + 1
        self.idf = {w: math.log(len(self.words) / f) for w, f in frequency.items()}

    def values(self, kind: str, words: list[str], documents: set[int]) -> dict[int, float]:
        """The (idf-weighted with ``idf``) share of ``words`` each of ``documents`` holds."""
        asked = {self.stem(w) for w in words}
        weight = {w: (self.idf.get(w, 0.0) if kind == "idf" else 1.0) for w in asked}
        total = sum(weight.values())
        if total <= 0:
            return {}
        held = {d: self.words.get(d, set()) for d in documents}
        return {d: sum(weight[w] for w in asked if w in held[d]) / total for d in documents}


class Prior:
    """The measured term for ``kind`` added to kb_search's fused document score, for the
    stores in ``self.graphs`` only (see the module's text)."""

    def __init__(self) -> None:
        self.tables: dict[Path, dict[str, dict[int, float]]] = {}
        self.graphs: dict[Path, tuple[dict[int, set[int]], dict[str, int]]] = {}
        self.coverage: dict[Path, Coverage] = {}
        self.kind = "indegree"
        self.weight = 0.0
        self.collect = kb_search._collect
        kb_search._collect = self._collect  # type: ignore[assignment]

    def _collect(
        self,
        conn: sqlite3.Connection,
        ranked: list[tuple[int, float]],
        words: list[str],
        top_k: int,
        **kw: Any,
    ) -> list[Hit]:
        (path,) = [r[2] for r in conn.execute("PRAGMA database_list") if r[1] == "main"]
        db = Path(path).resolve()
        if not (self.weight and kw["by_document"] and kw["titles"] and db in self.graphs):
            return self.collect(conn, ranked, words, top_k, **kw)
        if self.kind == "propagation":
            return self._propagated(partial(self.collect, conn, ranked, words, **kw), top_k, db)
        if self.kind == "superseded":
            return self._superseded(partial(self.collect, conn, ranked, words, **kw), top_k)
        if self.kind in ("share", "idf"):
            terms = zscores(self._coverage(conn, ranked, words, db), "none")
        else:
            terms = self.tables[db][self.kind]
        titles = dict(kw["titles"])
        for document, z in terms.items():
            titles[document] = titles.get(document, 0.0) + self.weight / kb_search.TITLE * z
        kw["titles"] = titles
        return self.collect(conn, ranked, words, top_k, **kw)

    def _coverage(
        self, conn: sqlite3.Connection, ranked: list[tuple[int, float]], words: list[str], db: Path
    ) -> dict[int, float]:
        """The share of ``words`` each document collected for the question holds."""
        if db not in self.coverage:
            self.coverage[db] = Coverage(db)
        ids = [i for i, _ in ranked]
        marks = ",".join("?" * len(ids))
        sql = f"SELECT DISTINCT document FROM chunks WHERE id IN ({marks})"
        documents = {int(d) for (d,) in conn.execute(sql, ids)}
        return self.coverage[db].values(self.kind, words, documents)

    @staticmethod
    def _superseded(run: Callable[[int], list[Hit]], top_k: int) -> list[Hit]:
        """kb_search's deprecated factor also on a document whose lead's first paragraphs hold
        the word anywhere, or "superseded" or "legacy"."""
        own = kb_search._deprecated

        def wider(conn: sqlite3.Connection, documents: set[int]) -> set[int]:
            found = own(conn, documents)
            for document in documents - found:
                row = conn.execute(
                    "SELECT text FROM chunks WHERE document = ? ORDER BY id LIMIT 1", (document,)
                ).fetchone()
                paragraphs = _PARAGRAPHS.split((row or ("",))[0].strip(), maxsplit=3)[:3]
                if any(_SUPERSEDED.search(p) for p in paragraphs):
                    found.add(document)
            return found

        kb_search._deprecated = wider  # type: ignore[assignment]
        try:
            return run(top_k)
        finally:
            kb_search._deprecated = own  # type: ignore[assignment]

    def _propagated(self, run: Callable[[int], list[Hit]], top_k: int, db: Path) -> list[Hit]:
        incoming, ids = self.graphs[db]
        hits = run(100_000)
        if not hits or hits[0].score <= 0:
            return hits[:top_k]
        best = hits[0].score
        top = {ids[h.source]: max(h.score, 0.0) / best for h in hits[:PROPAGATE]}
        spread = [sum(top.get(s, 0.0) for s in incoming.get(ids[h.source], ())) for h in hits]
        mean = sum(spread) / len(spread)
        sd = math.sqrt(sum((v - mean) ** 2 for v in spread) / len(spread))
        if sd <= 1e-12:
            return hits[:top_k]
        scored = [
            replace(h, score=h.score + self.weight * (v - mean) / sd)
            for h, v in zip(hits, spread, strict=True)
        ]
        scored.sort(key=lambda h: -h.score)
        return scored[:top_k]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="a python3-doc store kept by bench/kb.py")
    parser.add_argument("--pydoc", type=Path, default=PYDOC)
    parser.add_argument("--priors", default="indegree,pagerank")
    parser.add_argument("--weights", default="0,tie,0.05,0.1,0.2,0.3,0.5")
    parser.add_argument("--sources", choices=("base", "docs"), default="base")
    parser.add_argument(
        "--clip",
        choices=("none", "positive", "negative"),
        default="none",
        help="keep only the boosts (negatives as 0) or only the demotions (positives as 0)",
    )
    parser.add_argument("--held-out", help="score this one setting (PRIOR,W) on held out")
    parser.add_argument("--notes", action="store_true")
    parser.add_argument("--moves", action="store_true", help="print dev questions that move")
    parser.add_argument(
        "--no-deprecated", action="store_true", help="without kb_search's deprecated factor"
    )
    args = parser.parse_args()
    if args.no_deprecated:
        kb_search.DEPRECATED = 1.0
    db = args.store.resolve()
    library = args.pydoc if args.sources == "docs" else None
    tables = priors(db, library, args.clip)
    incoming, _ = graph(db, library)
    degree = sorted(len(s) for s in incoming.values())
    print(
        f"{len(incoming)} documents; linking pages per document: median "
        f"{degree[len(degree) // 2]}, max {degree[-1]}, none {degree.count(0)}"
    )
    kinds = args.priors.split(",")
    runs = [(k, w) for k in kinds for w in args.weights.split(",") if w != "0"]
    runs.insert(0, (kinds[0], "0"))
    sets = [("dev", quality.questions(quality.PYDOC_QUESTIONS))]
    if args.held_out is not None:
        kind, weight = args.held_out.split(",")
        runs = [(kind, "0"), (kind, weight)]
        sets += [
            ("held out", quality.questions(quality.PYDOC_HOLDOUT)),
            ("held out 2", quality.questions(quality.PYDOC_HOLDOUT2)),
        ]
    prior = Prior()
    prior.graphs[db] = (incoming, sources(db))
    prior.tables[db] = tables
    notes: list[tuple[str, Path, str]] = []
    if args.notes:
        tmp = Path(tempfile.mkdtemp(prefix="kb-prior-"))
        kinds_of_notes = (("notes md", quality.NOTES, ""), ("notes html", None, ".html"))
        for label, folder, suffix in kinds_of_notes:
            store = (tmp / f"{label.replace(' ', '-')}.sqlite3").resolve()
            ingest(store, "notes", [folder or quality.html_pages(tmp)], model=MINILM_L6)
            notes.append((label, store, suffix))
            prior.graphs[store] = (graph(store, None)[0], sources(store))
            prior.tables[store] = priors(store, None, args.clip)
    head = ["prior", "W"]
    head += [f"{name} {what}" for name, _ in sets for what in ("hit@1", "hit@3", "MRR@20")]
    head += [f"{label} {what}" for label, *_ in notes for what in ("hit@1", "hit@3")]
    print("\n" + quality.row(*head))
    print(quality.row(*(["---:"] * len(head))))
    asked_notes = quality.questions(quality.NOTES / "questions.tsv")
    default: list[int] = []
    for kind, weight in runs:
        prior.weight = 0.0 if weight == "0" else TIE if weight == "tie" else float(weight)
        prior.kind = kind
        cells: list[str] = []
        moved: list[str] = []
        for name, asked in sets:
            found = ranks(db, "py", asked)
            cells += figures(found)
            if name == "dev" and weight == "0":
                default = found
            elif name == "dev" and args.moves:
                moved = [
                    f"    {a} -> {b}: {q[0]} ({q[1]})"
                    for q, a, b in zip(asked, default, found, strict=True)
                    if a != b
                ]
        for _, store, suffix in notes:
            cells += figures(ranks(store, "notes", asked_notes, suffix))[:2]
        print(quality.row(kind if weight != "0" else "none", weight, *cells), flush=True)
        for line in moved:
            print(line, flush=True)


if __name__ == "__main__":
    main()

"""Incoming links' text (anchor text) as a ranking field, on a python3-doc store (issue 28).

    .venv/bin/python bench/kb.py --keep DIR --skip-speed   # builds DIR/pydoc-minilm-l6.sqlite3
    .venv/bin/python bench/kb_anchors.py DIR/pydoc-minilm-l6.sqlite3 [--weights 0,0.5,1]
        [--sources base|docs|base-context|context] [--vector 0.25,0.5] [--held-out W[,V]]
        [--notes]

Measured, not adopted (bench/RESULTS.md, session 16): nothing here is in the library. The
store is copied (``.anchors-SOURCES`` beside it) and given an FTS5 table ``document_anchors``
(rowid: a document's id; porter stemming, as ``chunks_fts``): each document's anchor field,
the text of the links pointing at it from *other* pages, one line per (linking page, text),
each linking page counting a text once, a text that more than half of the pages carry dropped
(navigation), links read from each page's main region (as ingestion reads the page), relative
targets resolved against the linking page's folder, ``#fragment`` and ``?query`` cut, web
addresses and root-relative ``/...`` targets left out. ``--sources``:

- ``base``: the link texts of the base's own pages (python3-doc's library/);
- ``docs``: also those of every other HTML page of python3-doc (tutorial, howto, FAQ,
  reference, What's New, glossary, the general and module indexes: 212 pages outside the base,
  never indexed);
- ``base-context`` / ``context``: the same sources, each link as the sentence around it (its
  first 200 characters) instead of its own words.

kb_search's own ranking then runs with one term more: ``ANCHOR`` x the BM25 of the query over
the anchor field, scaled by the best document's (a document its field finds and none of its
chunks enters by its first chunk, at a chunk score of 0), and with ``--vector V`` also ``V`` x
the z-score (over the documents with a field, negatives as 0) of the best cosine between the
query and a line of the document's field, each line embedded as ingestion embeds a chunk.
Dev questions (bench/kb_pydoc/questions.tsv) by default: hit@1, hit@3 and MRR@20 (the mean
reciprocal rank of the right page in the top 20, smoother than hit@1 over 33 questions).
``--held-out W[,V]`` scores that one setting (and the default) on both held-out sets too (look
once); ``--notes`` the notes set (bench/kb_notes, Markdown and HTML: no links between notes).
"""

from __future__ import annotations

import argparse
import os
import posixpath
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kb_quality import (
    NOTES,
    PYDOC_HOLDOUT,
    PYDOC_HOLDOUT2,
    PYDOC_QUESTIONS,
    html_pages,
    questions,
    row,
)
from pegboard.kb import ingest, search_base
from pegboard.kb import search as kb_search
from pegboard.kb.embedding import MINILM_L6, load_embedder
from pegboard.kb.extract import main_region
from pegboard.kb.search import Hit
from pegboard.kb.vectors import Dense, _standardised

PYDOC = Path("/usr/share/doc/python3.11/html/library")
MAX_TEXT_CHARS = 200  # of a link's text (its own words, or the sentence around it) kept
CONTEXT_CHARS = 300  # the window around a link that its sentence is cut from
BOILERPLATE_SHARE = 0.5  # a text carried by more than this share of the pages is dropped
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_WORD = re.compile(r"\w", re.UNICODE)
_DROPPED = frozenset(("script", "style", "nav", "footer"))
_BLOCKS = frozenset(
    ("p", "li", "dd", "dt", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre")
)


class _Links(HTMLParser):
    """Each ``<a href>`` of a page outside what ingestion drops: (href, its text, the sentence
    around it in its block)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str, str]] = []
        self._block: list[str] = []
        self._done: list[tuple[str, int, int]] = []  # href, start and end of its words
        self._link: tuple[str, int] | None = None
        self._dropped = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROPPED:
            self._dropped += 1
        elif tag in _BLOCKS:
            self._flush()
        elif tag == "a" and not self._dropped:
            self._end()
            href = dict(attrs).get("href")
            if href:
                self._link = (href.strip(), self._length())

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROPPED:
            self._dropped = max(0, self._dropped - 1)
        elif tag in _BLOCKS:
            self._flush()
        elif tag == "a":
            self._end()

    def handle_data(self, data: str) -> None:
        if not self._dropped:
            self._block.append(data)

    def close(self) -> None:
        super().close()
        self._flush()

    def _length(self) -> int:
        return sum(len(part) for part in self._block)

    def _end(self) -> None:
        if self._link is not None:
            self._done.append((*self._link, self._length()))
            self._link = None

    def _flush(self) -> None:
        self._end()
        text = "".join(self._block)
        for href, at, end in self._done:
            start = max(text.rfind(". ", 0, at) + 1, at - CONTEXT_CHARS // 2, 0)
            stop = text.find(". ", at)
            stop = min(len(text) if stop < 0 else stop + 1, at + CONTEXT_CHARS)
            own = " ".join(text[at:end].split())[:MAX_TEXT_CHARS]
            around = " ".join(text[start:stop].split())[:MAX_TEXT_CHARS]
            self.found.append((href, own, around))
        self._block, self._done = [], []


def page_links(page: Path, context: bool) -> list[tuple[str, str]]:
    """(href, text) of ``page``'s links in its main region: the link's own words, or with
    ``context`` the sentence around it."""
    reader = _Links()
    reader.feed(main_region(page.read_text(errors="replace")))
    reader.close()
    return [(href, around if context else own) for href, own, around in reader.found]


def targets(links: Sequence[tuple[str, str]], source: str) -> list[tuple[str, str]]:
    """(target path, text) of the links of the page at ``source`` that can point at another
    file: relative targets resolved, fragment and query cut, self-links and wordless texts
    left out."""
    folder = posixpath.dirname(source)
    out: list[tuple[str, str]] = []
    for href, raw in links:
        text = raw  # collapsed and cut by page_links
        if not _WORD.search(text) or _SCHEME.match(href) or href.startswith(("/", "\\")):
            continue
        path = unquote(href.split("#", 1)[0].split("?", 1)[0])
        if not path:
            continue
        target = posixpath.normpath(posixpath.join(folder, path))
        if target != source:
            out.append((target, text))
    return out


def anchor_texts(
    outgoing: Mapping[int, Sequence[tuple[str, str]]], documents: Mapping[str, int]
) -> dict[int, str]:
    """Each page's anchor field from every page's resolved links (page id -> links), pages by
    source -> id: one line per (linking page, text), boilerplate dropped."""
    carriers: dict[str, set[int]] = {}
    incoming: dict[int, dict[tuple[int, str], None]] = {}
    for origin, links in outgoing.items():
        for target, text in links:
            carriers.setdefault(text.lower(), set()).add(origin)
            found = documents.get(target)
            if found is not None and found != origin:
                incoming.setdefault(found, {})[(origin, text)] = None
    limit = len(documents) * BOILERPLATE_SHARE
    boilerplate = {t for t, by in carriers.items() if len(by) > limit}
    fields: dict[int, str] = {}
    for document, pairs in incoming.items():
        kept = [text for _, text in pairs if text.lower() not in boilerplate]
        if kept:
            fields[document] = "\n".join(kept)
    return fields


def build(db: Path, library: Path, sources: str) -> tuple[int, float]:
    """Write ``db``'s anchor fields for ``sources``; returns (pages read, seconds)."""
    started = time.perf_counter()
    context = "context" in sources
    conn = sqlite3.connect(db, isolation_level=None)
    documents = {str(s): int(i) for i, s in conn.execute("SELECT id, source FROM documents")}
    outgoing = {i: targets(page_links(Path(s), context), s) for s, i in documents.items()}
    extra = []
    if sources in ("docs", "context"):
        extra = sorted(
            p
            for p in library.parent.rglob("*.html")
            if library not in p.parents and not p.name.startswith("_")
        )
    for number, page in enumerate(extra, start=1):
        source = os.path.realpath(page)
        documents[source] = -number
        outgoing[-number] = targets(page_links(page, context), source)
    fields = anchor_texts(outgoing, documents)
    conn.execute("DROP TABLE IF EXISTS document_anchors")
    conn.execute(
        "CREATE VIRTUAL TABLE document_anchors USING fts5(text, tokenize='porter unicode61')"
    )
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO document_anchors(rowid, text) VALUES (?, ?)",
        [(i, t) for i, t in sorted(fields.items()) if i > 0],
    )
    conn.execute("UPDATE bases SET generation = generation + 1")
    conn.execute("COMMIT")
    return len(documents), time.perf_counter() - started


class AnchorTerms:
    """The two terms measured, put into kb_search's ranking for the store ``db`` only: the
    anchor field's BM25 (through the title term: ``TITLE * named`` gains ``weight * bm25``)
    and the anchor lines' best cosine (through the lead term)."""

    def __init__(self, db: Path, vectors: bool) -> None:
        import numpy as np

        self.db = db.resolve()
        self.weight = self.vector_weight = 0.0
        self.times: list[float] = []  # ms of each anchor-field query
        self.collect, self.dense = kb_search._collect, kb_search.dense_ranking
        kb_search._collect = self._collect  # type: ignore[assignment]
        kb_search.dense_ranking = self._dense  # type: ignore[assignment]
        self.conn = sqlite3.connect(db)
        if not vectors:
            return
        (model,) = self.conn.execute("SELECT model FROM bases").fetchone()
        self.embedder = load_embedder(model)
        owners: list[int] = []
        lines: list[str] = []
        for document, text in self.conn.execute(
            "SELECT rowid, text FROM document_anchors ORDER BY rowid"
        ):
            for line in dict.fromkeys(text.splitlines()):
                owners.append(int(document))
                lines.append(line)
        started = time.perf_counter()
        self.matrix = np.asarray(self.embedder.embed(lines), dtype=np.float32)
        self.owners = np.asarray(owners)
        self.documents, self.first = np.unique(self.owners, return_index=True)
        print(f"{len(lines):,} anchor lines embedded in {time.perf_counter() - started:.0f} s")

    def scores(self, words: list[str]) -> dict[int, float]:
        started = time.perf_counter()
        try:
            return self._scores(words)
        finally:
            self.times.append((time.perf_counter() - started) * 1000)

    def _scores(self, words: list[str]) -> dict[int, float]:
        if not words:
            return {}
        match = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
        found = self.conn.execute(
            "SELECT rowid, -bm25(document_anchors) AS s FROM document_anchors"
            " WHERE document_anchors MATCH ? ORDER BY s DESC LIMIT 100",
            (match,),
        ).fetchall()
        peak = max((float(s) for _, s in found), default=0.0)
        return {int(i): float(s) / peak for i, s in found} if peak > 0 else {}

    def _collect(
        self,
        conn: sqlite3.Connection,
        ranked: list[tuple[int, float]],
        words: list[str],
        top_k: int,
        **kw: Any,
    ) -> list[Hit]:
        if not self.weight or not kw["by_document"] or not kw["titles"] or not self._ours(conn):
            return self.collect(conn, ranked, words, top_k, **kw)
        anchors = self.scores(words)
        present = {
            int(d)
            for (d,) in conn.execute(
                f"SELECT DISTINCT document FROM chunks WHERE id IN ({','.join('?' * len(ranked))})",
                [i for i, _ in ranked],
            )
        }
        leads = [
            int(c)
            for d in sorted(set(anchors) - present)
            for (c,) in conn.execute(
                "SELECT id FROM chunks WHERE document = ? ORDER BY id LIMIT 1", (d,)
            )
        ]
        titles = dict(kw["titles"])
        for document, value in anchors.items():
            titles[document] = titles.get(document, 0.0) + self.weight / kb_search.TITLE * value
        kw["titles"] = titles
        return self.collect(conn, [*ranked, *((c, 0.0) for c in leads)], words, top_k, **kw)

    def _dense(
        self,
        conn: sqlite3.Connection,
        db_path: Path,
        generations: Mapping[str, int],
        model: str,
        query: str,
    ) -> Dense:
        import numpy as np

        found = self.dense(conn, db_path, generations, model, query)
        if not self.vector_weight or db_path.resolve() != self.db:
            return found
        cosine = self.matrix @ self.embedder.embed_query(query, lambda w: 1.0)
        best = np.maximum.reduceat(cosine, self.first)  # owners are sorted
        leads = dict(found.leads)
        for document, z in zip(self.documents.tolist(), _standardised(best).tolist(), strict=True):
            if z > 0:
                leads[document] = leads.get(document, 0.0) + self.vector_weight / kb_search.LEAD * z
        return Dense(found.chunks, leads, found.titles)

    def _ours(self, conn: sqlite3.Connection) -> bool:
        (path,) = [r[2] for r in conn.execute("PRAGMA database_list") if r[1] == "main"]
        return Path(path).resolve() == self.db


def ranks(db: Path, base: str, asked: list[tuple[str, str]], suffix: str = "") -> list[int]:
    """The rank (1-based, 0 when outside the top 20) of each question's page."""
    out = []
    for question, answer in asked:
        names = [Path(h.source).name for h in search_base(db, base, question, top_k=20)]
        wanted = Path(answer).with_suffix(suffix).name if suffix else answer
        out.append(names.index(wanted) + 1 if wanted in names else 0)
    return out


def figures(found: list[int]) -> tuple[str, str, str]:
    n = len(found)
    at1 = sum(r == 1 for r in found)
    at3 = sum(1 <= r <= 3 for r in found)
    return f"{at1}/{n}", f"{at3}/{n}", f"{sum(1 / r for r in found if r) / n:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="a python3-doc store kept by bench/kb.py")
    parser.add_argument("--pydoc", type=Path, default=PYDOC)
    parser.add_argument("--weights", default="0,0.25,0.5,1,1.5,2")
    parser.add_argument(
        "--sources", choices=("base", "docs", "base-context", "context"), default="base"
    )
    parser.add_argument("--vector", help="weights of the anchor-vector term, e.g. 0.25,0.5")
    parser.add_argument("--held-out", help="score this one setting (ANCHOR[,vector]) on held out")
    parser.add_argument("--notes", action="store_true")
    args = parser.parse_args()
    db = args.store.with_suffix(f".anchors-{args.sources}.sqlite3")
    shutil.copy(args.store, db)
    pages, secs = build(db, args.pydoc, args.sources)
    conn = sqlite3.connect(db)
    (fielded,) = conn.execute("SELECT count(*) FROM document_anchors").fetchone()
    (chars,) = conn.execute("SELECT sum(length(text)) FROM document_anchors").fetchone()
    (docs,) = conn.execute("SELECT count(*) FROM documents").fetchone()
    print(
        f"links of {pages} pages read in {secs:.1f} s: {fielded} of {docs} documents have an "
        f"anchor field ({(chars or 0) / 1e3:.0f} k characters)"
    )
    runs = [(float(w), 0.0) for w in args.weights.split(",")]
    if args.vector:
        runs += [(w, float(v)) for w, _ in runs for v in args.vector.split(",")]
    sets = [("dev", questions(PYDOC_QUESTIONS))]
    if args.held_out is not None:
        chosen = [float(x) for x in args.held_out.split(",")] + [0.0]
        runs = [(0.0, 0.0), (chosen[0], chosen[1])]
        sets += [("held out", questions(PYDOC_HOLDOUT)), ("held out 2", questions(PYDOC_HOLDOUT2))]
    terms = AnchorTerms(db, any(v for _, v in runs))
    notes: list[tuple[str, Path, str]] = []
    tmp = Path(tempfile.mkdtemp(prefix="kb-anchors-"))
    if args.notes:
        for label, folder, suffix in (("notes md", NOTES, ""), ("notes html", None, ".html")):
            store = tmp / f"{label.replace(' ', '-')}.sqlite3"
            ingest(store, "notes", [folder or html_pages(tmp)], model=MINILM_L6)
            notes.append((label, store, suffix))
    head = ["ANCHOR", "anchor vector"]
    head += [f"{name} {what}" for name, _ in sets for what in ("hit@1", "hit@3", "MRR@20")]
    head += [f"{label} {what}" for label, _, _ in notes for what in ("hit@1", "hit@3")]
    print("\n" + row(*head))
    print(row(*(["---:"] * len(head))))
    asked_notes = questions(NOTES / "questions.tsv")
    for weight, vector_weight in runs:
        terms.weight, terms.vector_weight = weight, vector_weight
        cells: list[str] = []
        for _, asked in sets:
            cells += figures(ranks(db, "py", asked))
        for _, store, suffix in notes:
            cells += figures(ranks(store, "notes", asked_notes, suffix))[:2]
        print(row(weight, vector_weight, *cells))
    if terms.times:
        times = sorted(terms.times)
        print(f"\nanchor-field query: p50 {times[len(times) // 2]:.2f} ms over {len(times)}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

"""``pegboard kb add``: files -> text -> chunks -> vectors -> the store, one file at a time.

A file is read, parsed, chunked and embedded before its transaction starts, and swapped in
within one transaction, so a failure at any step leaves that file's previous version (and every
other file) as it was. A file whose content hash is unchanged is not parsed again; in a file
that changed, a chunk whose title and text are those of one already stored keeps its vector
(an edited page costs the encoder only its edited passages).
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pegboard.errors import KnowledgeBaseError
from pegboard.kb import store
from pegboard.kb.chunking import chunk
from pegboard.kb.embedding import default_model, load_embedder
from pegboard.kb.excludes import check_patterns, excluded
from pegboard.kb.extract import extract
from pegboard.kb.files import Candidate, Skipped, discover, read_regular
from pegboard.kb.store import NewChunk, connect, document_hash, replace_document

_BASE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
Progress = Callable[[int, int, str], None]  # (files done, files in all, current file)


@dataclass(slots=True)
class IngestReport:
    """What one ``kb add`` did."""

    indexed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    chunks: int = 0
    reused: int = 0  # chunks of changed files whose stored vector was kept (same text)
    bytes: int = 0
    removed: list[str] = field(default_factory=list)  # now excluded, so taken out
    excludes: tuple[str, ...] = ()  # the patterns applied


def check_base_name(name: str) -> str:
    """``name`` if it is a valid base name, else a KnowledgeBaseError saying what is allowed."""
    if not _BASE_NAME.match(name):
        raise KnowledgeBaseError(
            f"invalid knowledge-base name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def ingest(
    db_path: Path,
    base: str,
    paths: Iterable[str | os.PathLike[str]],
    *,
    model: str | None = None,
    progress: Progress | None = None,
    exclude: Sequence[str] = (),
    config_exclude: Sequence[str] = (),
    forget_excludes: bool = False,
) -> IngestReport:
    """Add or refresh the files under ``paths`` in ``base`` (created on first success).

    ``exclude`` patterns are remembered for the base (added to those given before, which
    ``forget_excludes`` drops first); ``config_exclude`` ones (from the config file) apply
    without being stored. Files the patterns name are not read, and those already in the base
    under a folder given are removed from it.
    """
    check_base_name(base)
    given = check_patterns(exclude)
    paths = list(paths)
    with connect(db_path, create=True) as conn:
        row = conn.execute("SELECT model FROM bases WHERE name = ?", (base,)).fetchone()
        remembered = () if row is None or forget_excludes else store.excludes(conn, base)
        kept = check_patterns((*remembered, *given))
        patterns = check_patterns((*kept, *config_exclude))
        candidates, skipped = discover(paths, exclude=patterns)
        report = IngestReport(skipped=list(skipped), excludes=patterns)
        chosen = str(row[0]) if row is not None else (model or default_model())
        for done, candidate in enumerate(candidates):
            if progress is not None:
                progress(done, len(candidates), str(candidate.path))
            try:
                _one(conn, base, chosen, candidate, report)
            except KnowledgeBaseError as exc:
                report.skipped.append(Skipped(str(candidate.path), str(exc)))
            except sqlite3.Error as exc:
                report.skipped.append(
                    Skipped(str(candidate.path), f"{candidate.path}: not stored ({exc})")
                )
        if progress is not None:
            progress(len(candidates), len(candidates), "")
        if conn.execute("SELECT 1 FROM bases WHERE name = ?", (base,)).fetchone() is not None:
            store.set_excludes(conn, base, kept)
            report.removed = _drop_excluded(conn, base, paths, patterns)
    return report


def _drop_excluded(
    conn: sqlite3.Connection,
    base: str,
    paths: list[str | os.PathLike[str]],
    patterns: Sequence[str],
) -> list[str]:
    """Remove the documents of ``base`` under a folder of ``paths`` that ``patterns`` exclude."""
    if not patterns:
        return []
    roots = [os.path.realpath(os.path.expanduser(os.fspath(p))) for p in paths]
    roots = [r for r in roots if os.path.isdir(r)]
    removed: list[str] = []
    for source in sorted(store.sources(conn, base)):
        for root in roots:
            if source.startswith(root.rstrip("/") + "/"):
                if excluded(os.path.relpath(source, root).replace(os.sep, "/"), patterns):
                    store.remove(conn, base, source)
                    removed.append(source)
                break
    return removed


def _one(
    conn: sqlite3.Connection,
    base: str,
    model: str,
    candidate: Candidate,
    report: IngestReport,
) -> None:
    import numpy as np

    data = read_regular(candidate)
    source = os.path.realpath(candidate.path)
    digest = hashlib.sha256(data).hexdigest()
    if document_hash(conn, base, source) == digest:
        report.unchanged.append(source)
        untitled = store.untitled_document(conn, base, source)
        if untitled is not None:  # stored before titles were embedded: add its title's vector
            document, title = untitled
            vector = np.ascontiguousarray(load_embedder(model).embed([title]), dtype=np.float32)
            store.add_title_vector(conn, document, vector[0].tobytes())
        return
    doc = extract(data, candidate.path)
    pieces = chunk(doc)
    stored = store.chunk_vectors(conn, base, source)
    new = [i for i, c in enumerate(pieces) if (c.title, c.text) not in stored]
    texts = [f"{pieces[i].title}\n{pieces[i].text}" for i in new] + [doc.title]
    rows = np.ascontiguousarray(load_embedder(model).embed(texts), dtype=np.float32)
    fresh = {i: rows[row].tobytes() for row, i in enumerate(new)}
    replace_document(
        conn,
        base,
        model=model,
        source=source,
        content_hash=digest,
        title=doc.title,
        size=len(data),
        title_vector=rows[-1].tobytes(),  # the page's title alone (search.TITLE)
        chunks=[
            NewChunk(c.position, c.title, c.text, fresh.get(i) or stored[(c.title, c.text)])
            for i, c in enumerate(pieces)
        ],
    )
    report.indexed.append(source)
    report.chunks += len(pieces)
    report.reused += len(pieces) - len(new)
    report.bytes += len(data)

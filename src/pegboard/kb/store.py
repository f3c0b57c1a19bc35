"""The knowledge-base store: one SQLite file per data directory holding every base.

Tables: ``bases`` (name, embedding model, a generation bumped by every write), ``base_excludes``
(the exclude patterns ``kb add`` remembers per base), ``documents``
(source path, content hash, title), ``chunks`` (source, title, position, text and the chunk's
float32 vector as a blob), ``chunks_fts`` (FTS5 over title and text, kept in step with
``chunks`` by triggers) and ``chunks_vocab`` (the FTS5 term statistics, for query weights).
A document is replaced in one transaction, so a file that fails halfway leaves the base as it was.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pegboard.errors import KnowledgeBaseError
from pegboard.kb import KB_FILENAME as KB_FILENAME  # the names it had here, kept
from pegboard.kb import kb_path as kb_path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS bases(
    name TEXT PRIMARY KEY, model TEXT NOT NULL, created REAL NOT NULL,
    generation INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS documents(
    id INTEGER PRIMARY KEY, base TEXT NOT NULL REFERENCES bases(name),
    source TEXT NOT NULL, content_hash TEXT NOT NULL, title TEXT NOT NULL,
    bytes INTEGER NOT NULL, added REAL NOT NULL, UNIQUE(base, source));
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY, document INTEGER NOT NULL REFERENCES documents(id),
    base TEXT NOT NULL, source TEXT NOT NULL, title TEXT NOT NULL, position INTEGER NOT NULL,
    text TEXT NOT NULL, vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS document_titles(
    document INTEGER PRIMARY KEY REFERENCES documents(id), vector BLOB NOT NULL);
CREATE TRIGGER IF NOT EXISTS documents_ad AFTER DELETE ON documents BEGIN
    DELETE FROM document_titles WHERE document = old.id; END;
CREATE TABLE IF NOT EXISTS base_excludes(
    base TEXT NOT NULL, pattern TEXT NOT NULL, PRIMARY KEY(base, pattern));
CREATE INDEX IF NOT EXISTS chunks_base ON chunks(base, id);
CREATE INDEX IF NOT EXISTS chunks_document ON chunks(document);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    title, text, content='chunks', content_rowid='id', tokenize='porter unicode61');
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vocab USING fts5vocab(chunks_fts, 'row');
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, title, text) VALUES (new.id, new.title, new.text); END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, title, text)
    VALUES ('delete', old.id, old.title, old.text); END;
"""


@dataclass(frozen=True, slots=True)
class BaseInfo:
    """One knowledge base as ``kb list`` shows it."""

    name: str
    model: str
    documents: int
    chunks: int
    excludes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NewChunk:
    """A chunk ready to store: its text and its vector as float32 bytes."""

    position: int
    title: str
    text: str
    vector: bytes


# SQLite's WAL-reset bug corrupts a database that two or more connections use in WAL mode;
# it is in 3.7.0 through 3.51.2, fixed in 3.51.3 and backported to 3.50.7 and 3.44.6.
_WAL_FIXED = {(3, 50): 7, (3, 44): 6}


def wal_is_safe(version: tuple[int, ...]) -> bool:
    """Whether SQLite ``version`` is free of the WAL-reset bug."""
    if version >= (3, 51, 3):
        return True
    fixed = _WAL_FIXED.get((version[0], version[1]))
    return fixed is not None and version[2] >= fixed


def journal_mode(version: tuple[int, ...] = sqlite3.sqlite_version_info) -> str:
    """WAL (readers never block the writer) where SQLite has no WAL-reset bug, else the
    rollback journal (``pegboard kb add`` and a running gateway may share the file)."""
    return "WAL" if wal_is_safe(version) else "DELETE"


@contextmanager
def connect(path: Path, *, create: bool = False) -> Iterator[sqlite3.Connection]:
    """A connection to the store at ``path`` (created with its schema when ``create``)."""
    if not create and not path.is_file():
        raise KnowledgeBaseError(
            f"no knowledge bases yet ({path} does not exist); create one with "
            "`pegboard kb add NAME PATH...`"
        )
    try:
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=30.0, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise KnowledgeBaseError(f"cannot open the knowledge-base store {path}: {exc}") from exc
    try:
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute(f"PRAGMA journal_mode={journal_mode()}")
        if create:
            conn.executescript(_SCHEMA)
        yield conn
    except sqlite3.DatabaseError as exc:
        raise KnowledgeBaseError(f"the knowledge-base store {path} is unreadable: {exc}") from exc
    finally:
        conn.close()


def ensure_base(conn: sqlite3.Connection, name: str, model: str) -> str:
    """Create base ``name`` if new; returns the embedding model the base uses."""
    row = conn.execute("SELECT model FROM bases WHERE name = ?", (name,)).fetchone()
    if row is not None:
        return str(row[0])
    conn.execute(
        "INSERT INTO bases(name, model, created) VALUES (?, ?, ?)", (name, model, time.time())
    )
    return model


def document_hash(conn: sqlite3.Connection, base: str, source: str) -> str | None:
    row = conn.execute(
        "SELECT content_hash FROM documents WHERE base = ? AND source = ?", (base, source)
    ).fetchone()
    return None if row is None else str(row[0])


def chunk_vectors(conn: sqlite3.Connection, base: str, source: str) -> dict[tuple[str, str], bytes]:
    """The stored vectors of the document at ``source`` in ``base``, by (title, text)."""
    rows = conn.execute(
        "SELECT c.title, c.text, c.vector FROM chunks c JOIN documents d ON d.id = c.document"
        " WHERE d.base = ? AND d.source = ?",
        (base, source),
    ).fetchall()
    return {(str(t), str(x)): bytes(v) for t, x, v in rows}


def replace_document(
    conn: sqlite3.Connection,
    base: str,
    *,
    model: str,
    source: str,
    content_hash: str,
    title: str,
    size: int,
    chunks: Sequence[NewChunk],
    title_vector: bytes = b"",
) -> None:
    """Swap in a document's new chunks, and its title's vector (float32 bytes) when given, in
    one transaction (all or nothing); the base is created with ``model`` in the same
    transaction if it is new."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        ensure_base(conn, base, model)
        _delete_documents(conn, base, "source = ?", (source,))
        cur = conn.execute(
            "INSERT INTO documents(base, source, content_hash, title, bytes, added)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (base, source, content_hash, title, size, time.time()),
        )
        conn.executemany(
            "INSERT INTO chunks(document, base, source, title, position, text, vector)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(cur.lastrowid, base, source, c.title, c.position, c.text, c.vector) for c in chunks],
        )
        if title_vector:
            conn.execute(
                "INSERT INTO document_titles(document, vector) VALUES (?, ?)",
                (cur.lastrowid, title_vector),
            )
        _bump(conn, base)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def untitled_document(conn: sqlite3.Connection, base: str, source: str) -> tuple[int, str] | None:
    """(id, title) of the document at ``source`` in ``base`` when it has no title vector yet
    (stored by a pegboard from before titles were embedded)."""
    row = conn.execute(
        "SELECT d.id, d.title FROM documents d LEFT JOIN document_titles t ON t.document = d.id"
        " WHERE d.base = ? AND d.source = ? AND t.document IS NULL",
        (base, source),
    ).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def add_title_vector(conn: sqlite3.Connection, document: int, vector: bytes) -> None:
    """Store ``document``'s title vector (float32 bytes); the base's searches see it."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "INSERT INTO document_titles(document, vector) VALUES (?, ?)", (document, vector)
        )
        conn.execute(
            "UPDATE bases SET generation = generation + 1"
            " WHERE name = (SELECT base FROM documents WHERE id = ?)",
            (document,),
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def remove(conn: sqlite3.Connection, base: str, source_prefix: str | None = None) -> int:
    """Remove a whole base, or its documents at or under ``source_prefix``; returns documents
    removed. Raises when the base does not exist."""
    if conn.execute("SELECT 1 FROM bases WHERE name = ?", (base,)).fetchone() is None:
        raise KnowledgeBaseError(f"no knowledge base named {base!r}; see `pegboard kb list`")
    conn.execute("BEGIN IMMEDIATE")
    try:
        if source_prefix is None:
            count = _delete_documents(conn, base, "1", ())
            conn.execute("DELETE FROM bases WHERE name = ?", (base,))
            if _has_excludes_table(conn):
                conn.execute("DELETE FROM base_excludes WHERE base = ?", (base,))
        else:
            under = source_prefix.rstrip("/") + "/"
            count = _delete_documents(
                conn,
                base,
                "(source = ? OR substr(source, 1, ?) = ?)",
                (source_prefix, len(under), under),
            )
            _bump(conn, base)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return count


def _delete_documents(
    conn: sqlite3.Connection, base: str, where: str, params: tuple[object, ...]
) -> int:
    ids = [
        row[0]
        for row in conn.execute(
            f"SELECT id FROM documents WHERE base = ? AND {where}", (base, *params)
        )
    ]
    for doc_id in ids:
        conn.execute("DELETE FROM chunks WHERE document = ?", (doc_id,))
        conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
    return len(ids)


def _bump(conn: sqlite3.Connection, base: str) -> None:
    conn.execute("UPDATE bases SET generation = generation + 1 WHERE name = ?", (base,))


def list_bases(conn: sqlite3.Connection) -> list[BaseInfo]:
    rows = conn.execute(
        "SELECT b.name, b.model,"
        " (SELECT count(*) FROM documents d WHERE d.base = b.name),"
        " (SELECT count(*) FROM chunks c WHERE c.base = b.name)"
        " FROM bases b ORDER BY b.name"
    ).fetchall()
    return [BaseInfo(str(n), str(m), int(d), int(c), excludes(conn, n)) for n, m, d, c in rows]


def excludes(conn: sqlite3.Connection, base: str) -> tuple[str, ...]:
    """The exclude patterns remembered for ``base``, in the order they were first given."""
    if not _has_excludes_table(conn):  # a store written before excludes existed
        return ()
    rows = conn.execute(
        "SELECT pattern FROM base_excludes WHERE base = ? ORDER BY rowid", (base,)
    ).fetchall()
    return tuple(str(r[0]) for r in rows)


def set_excludes(conn: sqlite3.Connection, base: str, patterns: Sequence[str]) -> None:
    """Remember exactly ``patterns`` for ``base`` (which must exist)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DELETE FROM base_excludes WHERE base = ?", (base,))
        conn.executemany(
            "INSERT INTO base_excludes(base, pattern) VALUES (?, ?)", [(base, p) for p in patterns]
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def sources(conn: sqlite3.Connection, base: str) -> list[str]:
    """Every document source of ``base``."""
    rows = conn.execute("SELECT source FROM documents WHERE base = ?", (base,)).fetchall()
    return [str(r[0]) for r in rows]


def _has_excludes_table(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'base_excludes'"
    ).fetchone()
    return row is not None


def base_model(conn: sqlite3.Connection, base: str) -> tuple[str, int]:
    """The embedding model and generation of ``base`` (raises when it does not exist)."""
    row = conn.execute("SELECT model, generation FROM bases WHERE name = ?", (base,)).fetchone()
    if row is None:
        raise KnowledgeBaseError(f"no knowledge base named {base!r}; see `pegboard kb list`")
    return str(row[0]), int(row[1])


def sample_sources(conn: sqlite3.Connection, base: str, limit: int) -> list[str]:
    rows = conn.execute(
        "SELECT source FROM documents WHERE base = ? ORDER BY source LIMIT ?", (base, limit)
    ).fetchall()
    return [str(r[0]) for r in rows]

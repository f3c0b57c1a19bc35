"""The catalog store in one SQLite file: shared tables, per-replica state, the change feed.

Journal mode: the rollback journal (``journal_mode=DELETE``), deliberately NOT WAL. The system
SQLite here is 3.40.1, inside the range of SQLite's WAL-reset corruption bug (3.7.0 to 3.51.2,
fixed in 3.51.3) that bites when two or more connections use WAL, and several pegboard
processes (CLI, gateway) may open the same file. Rollback-journal commits are atomic through a
crash, writers take ``BEGIN IMMEDIATE`` with a ``busy_timeout`` so contention waits instead of
failing, and each server's record is replaced in one transaction (never half-written), with
its change-feed row in the same transaction.
Writers from several processes also queue on an advisory ``flock`` of ``<name>.lock``: SQLite's
busy handler polls with sleeps of up to 100 ms, so under steady contention one writer could
starve past any timeout (4 processes x 500 writes: "database is locked" after 10 s); a blocked
``flock`` is woken as soon as the lock is released.

The cache never breaks pegboard: a corrupt or unreadable file is moved to
``<name>.corrupt-<ts>`` and rebuilt with a warning; a location that cannot be written turns
persistence off with a warning and the catalog keeps working from memory.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from pegboard.errors import CatalogError
from pegboard.mcp.store import (
    FEED_KEEP,
    SECRET_BYTES,
    Change,
    MemoryCatalogStore,
    SharedTable,
    StoredContent,
    StoredServer,
    StoredState,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: SQLite's busy timeout alone
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("pegboard.mcp.store")

# 2: per-replica state (status, error, backoff) apart from the shared tool lists; the feed.
SCHEMA_VERSION = 2
BUSY_TIMEOUT_MS = 10_000

_DDL = """
CREATE TABLE IF NOT EXISTS servers (
    server_id     TEXT PRIMARY KEY,
    fingerprint   TEXT NOT NULL,
    tools         TEXT,
    tool_hashes   TEXT NOT NULL,
    fetched_at    REAL
);
CREATE TABLE IF NOT EXISTS server_state (
    server_id     TEXT PRIMARY KEY,
    fingerprint   TEXT NOT NULL,
    status        TEXT NOT NULL,
    error         TEXT,
    error_at      REAL,
    backoff_until REAL
);
CREATE TABLE IF NOT EXISTS pins (
    server_id TEXT NOT NULL,
    tool      TEXT NOT NULL,
    hash      TEXT NOT NULL,
    PRIMARY KEY (server_id, tool)
);
CREATE TABLE IF NOT EXISTS content (
    server_id   TEXT NOT NULL,
    kind        TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    items       TEXT NOT NULL,
    PRIMARY KEY (server_id, kind)
);
CREATE TABLE IF NOT EXISTS secrets (
    name       TEXT PRIMARY KEY,
    value      BLOB NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS spent (
    token      TEXT PRIMARY KEY,
    expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS changes (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    tbl       TEXT NOT NULL,
    server_id TEXT NOT NULL,
    at        REAL NOT NULL
)
"""
# The columns each table must have; a table that differs (an older or foreign layout) is
# dropped and recreated: its content is a cache or trust pins, and every write would fail.
_COLUMNS = {
    "servers": ["server_id", "fingerprint", "tools", "tool_hashes", "fetched_at"],
    "server_state": ["server_id", "fingerprint", "status", "error", "error_at", "backoff_until"],
    "pins": ["server_id", "tool", "hash"],
    "content": ["server_id", "kind", "fingerprint", "items"],
    "changes": ["seq", "tbl", "server_id", "at"],
    "secrets": ["name", "value", "created_at"],
    "spent": ["token", "expires_at"],
}
_Statements = list[tuple[str, tuple[Any, ...]]]


class _NewerSchema(sqlite3.DatabaseError):
    """The file was written by a newer pegboard: moved aside as ``.newer-<ts>``, not as corrupt."""


class SqliteCatalogStore:
    """Both store contracts in one SQLite file (rollback journal; see the module docstring)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._memory = MemoryCatalogStore()
        self._db: sqlite3.Connection | None = None
        self._lock_file: Any = None
        self._closed = False
        try:
            self._db = self._open_or_rebuild()
            with suppress(OSError):
                self._lock_file = open(f"{self.path}.lock", "ab")  # noqa: SIM115
        except (OSError, sqlite3.Error) as exc:
            logger.warning(
                "MCP tool catalog at %s cannot be used (%s); persistence is off for this run. "
                "Point the data directory at a writable local disk to keep tools across restarts.",
                self.path,
                exc,
            )

    @property
    def persistent(self) -> bool:
        return self._db is not None

    def _check_open(self) -> None:
        """A store used after :meth:`close` raises (it never answers from the memory kept
        for a file that could not be opened)."""
        if self._closed:
            raise CatalogError(
                f"the MCP tool catalog {self.path} was closed; open a new store to use it again"
            )

    # -- opening ------------------------------------------------------------------------------
    def _open_or_rebuild(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return self._open()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and not self._looks_corrupt(exc):
                raise
            newer = isinstance(exc, _NewerSchema)
            kind = "newer" if newer else "corrupt"
            aside = self.path.with_name(f"{self.path.name}.{kind}-{int(time.time() * 1000)}")
            self.path.replace(aside)
            for suffix in ("-journal", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            if newer:
                logger.warning(
                    "MCP tool catalog %s was written by a newer pegboard (%s); moved it to %s "
                    "and started a new one. Tools are re-listed from the servers; the newer "
                    "pegboard can use the moved file again.",
                    self.path,
                    exc,
                    aside,
                )
            else:
                logger.warning(
                    "MCP tool catalog %s was unreadable (%s); moved it to %s and started a new "
                    "one. Tools are re-listed from the servers.",
                    self.path,
                    exc,
                    aside,
                )
            return self._open()

    @staticmethod
    def _looks_corrupt(exc: sqlite3.Error) -> bool:
        text = str(exc).lower()
        return any(w in text for w in ("malformed", "not a database", "corrupt", "schema version"))

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        try:
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA journal_mode = DELETE")
            db.execute("PRAGMA synchronous = FULL")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise _NewerSchema(
                    f"catalog schema version {version}; this pegboard reads version"
                    f" {SCHEMA_VERSION}"
                )
            if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise sqlite3.DatabaseError("quick_check failed: file is corrupt")
            # A file of this schema opens without a write transaction (a cache read would
            # otherwise take the write lock and journal the file: ~5 ms of fsyncs).
            if version != SCHEMA_VERSION or not self._layout_is_current(db):
                db.execute("BEGIN IMMEDIATE")
                for table, columns in _COLUMNS.items():
                    found = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
                    if found and found != columns:
                        logger.warning(
                            "MCP tool catalog %s: table %s has columns %s, expected %s; rebuilt",
                            self.path,
                            table,
                            ", ".join(found),
                            ", ".join(columns),
                        )
                        db.execute(f"DROP TABLE {table}")
                for statement in _DDL.split(";"):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                db.execute("COMMIT")
            db.execute("SELECT count(*) FROM servers").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    @staticmethod
    def _layout_is_current(db: sqlite3.Connection) -> bool:
        """Whether every table exists with the columns :data:`_COLUMNS` names."""
        return all(
            [row[1] for row in db.execute(f"PRAGMA table_info({table})")] == columns
            for table, columns in _COLUMNS.items()
        )

    # -- records ------------------------------------------------------------------------------
    def load_all(self) -> dict[str, StoredServer]:
        self._check_open()
        if self._db is None:
            return self._memory.load_all()
        with self._lock:
            rows = self._db.execute("SELECT * FROM servers").fetchall()
        records = {}
        for row in rows:
            record = decode_record(row)
            if record is not None:
                records[record.server_id] = record
        return records

    def get(self, server_id: str) -> StoredServer | None:
        self._check_open()
        if self._db is None:
            return self._memory.get(server_id)
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM servers WHERE server_id = ?", (server_id,)
            ).fetchone()
        return decode_record(row) if row else None

    def put(self, record: StoredServer) -> None:
        """Replace the server's record in one transaction."""
        self._check_open()
        if self._db is None:
            self._memory.put(record)
            return
        row = (
            record.server_id,
            record.fingerprint,
            None if record.tools is None else json.dumps(list(record.tools), ensure_ascii=False),
            json.dumps(record.tool_hashes, sort_keys=True),
            record.fetched_at,
        )
        sql = "INSERT OR REPLACE INTO servers VALUES (?,?,?,?,?)"
        self._write_all([(sql, row)], [("tools", record.server_id)])

    def delete(self, server_id: str) -> None:
        self._check_open()
        if self._db is None:
            self._memory.delete(server_id)
            return
        self._write_all(
            [
                ("DELETE FROM servers WHERE server_id = ?", (server_id,)),
                ("DELETE FROM content WHERE server_id = ?", (server_id,)),
            ],
            [("tools", server_id), ("content", server_id)],
        )

    def content(self, server_id: str, kind: str) -> StoredContent | None:
        """The cached ``kind`` (resources, templates, prompts) of ``server_id``, if any."""
        self._check_open()
        if self._db is None:
            return self._memory.content(server_id, kind)
        with self._lock:
            row = self._db.execute(
                "SELECT fingerprint, items FROM content WHERE server_id = ? AND kind = ?",
                (server_id, kind),
            ).fetchone()
        if row is None:
            return None
        try:
            items = json.loads(row[1])
        except ValueError:
            return None  # a damaged row is a cache miss; the next listing replaces it
        if not isinstance(items, list):
            return None
        return StoredContent(server_id, kind, str(row[0]), tuple(items))

    def set_content(self, record: StoredContent) -> None:
        """Replace the cached ``record.kind`` of ``record.server_id``."""
        self._check_open()
        if self._db is None:
            self._memory.set_content(record)
            return
        items = json.dumps(list(record.items), ensure_ascii=False)
        row = (record.server_id, record.kind, record.fingerprint, items)
        sql = "INSERT OR REPLACE INTO content VALUES (?,?,?,?)"
        self._write_all([(sql, row)], [("content", record.server_id)])

    def pins(self, server_id: str) -> dict[str, str]:
        """The trusted definition hashes of ``server_id`` (key ``""``: its launch definition)."""
        self._check_open()
        if self._db is None:
            return self._memory.pins(server_id)
        with self._lock:
            rows = self._db.execute(
                "SELECT tool, hash FROM pins WHERE server_id = ?", (server_id,)
            ).fetchall()
        return {str(tool): str(digest) for tool, digest in rows}

    def set_pins(self, server_id: str, pins: dict[str, str], *, replace: bool = False) -> None:
        """Record trusted hashes (``replace``: drop the server's other pins first)."""
        self._check_open()
        if self._db is None:
            self._memory.set_pins(server_id, pins, replace=replace)
            return
        statements: list[tuple[str, tuple[Any, ...]]] = []
        if replace:
            statements.append(("DELETE FROM pins WHERE server_id = ?", (server_id,)))
        statements += [
            ("INSERT OR REPLACE INTO pins VALUES (?,?,?)", (server_id, tool, digest))
            for tool, digest in sorted(pins.items())
        ]
        self._write_all(statements, [("pins", server_id)])

    @contextmanager
    def _writer_turn(self) -> Iterator[None]:
        """Queue behind writers of other processes (advisory; SQLite still guards the data)."""
        if fcntl is None or self._lock_file is None:
            yield
            return
        fcntl.flock(self._lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)

    # -- the change feed ----------------------------------------------------------------------
    def version(self, table: SharedTable) -> int:
        self._check_open()
        if self._db is None:
            return self._memory.version(table)
        with self._lock:
            row = self._db.execute("SELECT max(seq) FROM changes WHERE tbl = ?", (table,))
            found = row.fetchone()[0]
        return int(found or 0)

    def changes(self, since: int = 0) -> list[Change]:
        self._check_open()
        if self._db is None:
            return self._memory.changes(since)
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, tbl, server_id, at FROM changes WHERE seq > ? ORDER BY seq", (since,)
            ).fetchall()
        return [Change(int(seq), tbl, str(sid), float(at)) for seq, tbl, sid, at in rows]

    # -- shared secrets and spent tokens (the gateway's sealed approval rounds) -------------
    def secret(self, name: str) -> bytes:
        """The secret called ``name`` (random, made by whichever process asks first).

        Every process and replica on this store reads the same bytes, so one can verify what
        another sealed. Never logged or shown.
        """
        self._check_open()
        if self._db is None:
            return self._memory.secret(name)
        fresh = os.urandom(SECRET_BYTES)
        self._write_all(
            [("INSERT OR IGNORE INTO secrets VALUES (?,?,?)", (name, fresh, time.time()))]
        )
        with self._lock:
            row = self._db.execute("SELECT value FROM secrets WHERE name = ?", (name,)).fetchone()
        return bytes(row[0])

    def spend(self, token: str, expires_at: float) -> bool:
        """Record ``token`` as used until ``expires_at``: True the first time, False for any
        later attempt (from any process on this store). Expired tokens are forgotten."""
        self._check_open()
        if self._db is None:
            return self._memory.spend(token, expires_at)
        with self._lock, self._writer_turn():
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.execute("DELETE FROM spent WHERE expires_at <= ?", (time.time(),))
                    cursor = self._db.execute(
                        "INSERT OR IGNORE INTO spent VALUES (?,?)", (token, expires_at)
                    )
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:
                        with suppress(sqlite3.Error):
                            self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise CatalogError(
                    f"could not write the MCP tool catalog {self.path}: {exc}. "
                    "Check that the disk is writable and not full."
                ) from exc
        return cursor.rowcount == 1

    # -- per-replica state --------------------------------------------------------------------
    def load_states(self) -> dict[str, StoredState]:
        self._check_open()
        if self._db is None:
            return self._memory.load_states()
        with self._lock:
            rows = self._db.execute("SELECT * FROM server_state").fetchall()
        return {str(row[0]): StoredState(*row) for row in rows}

    def put_state(self, record: StoredState) -> None:
        self._check_open()
        if self._db is None:
            self._memory.put_state(record)
            return
        row = (
            record.server_id,
            record.fingerprint,
            record.status,
            record.error,
            record.error_at,
            record.backoff_until,
        )
        self._write_all([("INSERT OR REPLACE INTO server_state VALUES (?,?,?,?,?,?)", row)])

    def delete_state(self, server_id: str) -> None:
        self._check_open()
        if self._db is None:
            self._memory.delete_state(server_id)
            return
        self._write_all([("DELETE FROM server_state WHERE server_id = ?", (server_id,))])

    def _write_all(
        self, statements: _Statements, changed: Sequence[tuple[SharedTable, str]] = ()
    ) -> None:
        """Run ``statements`` in one transaction, with a feed row per ``changed`` table."""
        assert self._db is not None
        now = time.time()
        feed: _Statements = [
            ("INSERT INTO changes (tbl, server_id, at) VALUES (?,?,?)", (table, sid, now))
            for table, sid in changed
        ]
        if feed:  # keep the feed bounded: the newest rows, and each table's last one
            feed.append((_PRUNE, (FEED_KEEP,)))
        with self._lock, self._writer_turn():
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    for sql, params in [*statements, *feed]:
                        self._db.execute(sql, params)
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:  # SQLite already rolled back on SQLITE_FULL
                        with suppress(sqlite3.Error):
                            self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise CatalogError(
                    f"could not write the MCP tool catalog {self.path}: {exc}. "
                    "Check that the disk is writable and not full."
                ) from exc

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._db is not None:
                self._db.close()
                self._db = None
            if self._lock_file is not None:
                self._lock_file.close()
                self._lock_file = None


_PRUNE = (
    "DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes) - ?"
    " AND seq NOT IN (SELECT max(seq) FROM changes GROUP BY tbl)"
)


def decode_record(row: tuple[Any, ...]) -> StoredServer | None:
    try:
        server_id, fingerprint, tools, hashes, fetched_at = row
        decoded = None if tools is None else tuple(json.loads(tools))
        return StoredServer(
            server_id=server_id,
            fingerprint=fingerprint,
            tools=decoded,
            tool_hashes=dict(json.loads(hashes)),
            fetched_at=fetched_at,
        )
    except (ValueError, TypeError) as exc:
        logger.warning("ignoring an unreadable MCP catalog row (%s)", exc)
        return None

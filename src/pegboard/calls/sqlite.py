"""One SQLite file of approval state, used from the event loop without blocking it.

Every statement runs in a worker thread (``anyio.to_thread``) on one connection guarded by a
lock; writes are single transactions (``BEGIN IMMEDIATE``, so writers of several processes
queue on SQLite's busy timeout instead of failing). The rollback journal, not WAL, for the
reason :mod:`pegboard.mcp.store` gives (the system SQLite's WAL-reset bug with several
processes on one file).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio.to_thread

T = TypeVar("T")
BUSY_TIMEOUT_S = 10.0


class SqliteFile:
    """A SQLite database at ``path`` with the tables of ``ddl``, opened (and created) by the
    first statement, never by the constructor; :meth:`read` and :meth:`write` run on it."""

    def __init__(self, path: str | Path, ddl: str) -> None:
        self.path = Path(path)
        self._ddl = ddl
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None  # opened by the first statement

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            db.execute("PRAGMA journal_mode=DELETE")
            db.executescript(self._ddl)
            self._db = db
        return self._db

    def _locked(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            return fn(self._connection())

    def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                result = fn(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return result

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` (reads) in a worker thread."""
        return await anyio.to_thread.run_sync(self._locked, fn)

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one write transaction in a worker thread."""
        return await anyio.to_thread.run_sync(self._transaction, fn)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

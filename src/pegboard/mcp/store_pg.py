"""The catalog's shared data in PostgreSQL (``[store] url``): what N gateway replicas share.

The same :class:`~pegboard.mcp.store.CatalogStore` as the SQLite file, table for table (the
schema: :mod:`pegboard.postgres.schema`), so one protocol test suite runs against both. Each
write is one transaction with its change-feed row, and notifies the channel
:data:`~pegboard.postgres.CHANNEL` with that row (delivered at commit), which is how other
replicas learn of it at once (:mod:`pegboard.mcp.feed`). Feed writers take a transaction-level
advisory lock, so positions are committed in order and ``changes(since)`` never skips one.

Per-replica state (each server's status, error, backoff) is not here: it stays in the replica's
own SQLite file, since each replica supervises its own upstream children.

The protocol is synchronous (the cache calls it from worker threads, never on the event loop),
so this uses psycopg's synchronous pool.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from pegboard.errors import CatalogError
from pegboard.mcp import store as _store
from pegboard.mcp.store import (
    SECRET_BYTES,
    Change,
    SharedTable,
    StoredContent,
    StoredServer,
)
from pegboard.mcp.store_sqlite import decode_record
from pegboard.postgres import CHANNEL, Database, shown_url
from pegboard.postgres.schema import FEED_LOCK

if TYPE_CHECKING:
    import psycopg

_Statements = list[tuple[str, tuple[Any, ...]]]
_PRUNE = (
    "DELETE FROM pegboard.changes WHERE seq <= (SELECT max(seq) FROM pegboard.changes) - %s"
    " AND seq NOT IN (SELECT max(seq) FROM pegboard.changes GROUP BY tbl)"
)


class PostgresCatalogStore:
    """The shared catalog tables in a PostgreSQL database (see the module docstring)."""

    persistent = True

    def __init__(self, database: Database | str, *, max_connections: int = 8) -> None:
        """On ``database`` (a URL opens one: see :class:`~pegboard.postgres.Database`)."""
        if isinstance(database, str):
            database = Database(database, max_connections=max_connections)
        self.db = database.acquire()
        self.url = database.url
        self.origin = database.origin
        self._closed = False

    def __repr__(self) -> str:
        return f"PostgresCatalogStore({shown_url(self.url)})"

    def _conn(self, doing: str) -> AbstractContextManager[psycopg.Connection[Any]]:
        if self._closed:
            raise CatalogError(f"the team store {shown_url(self.url)} is closed")
        return self.db.connection(doing, CatalogError)

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._conn("read") as conn:
            return conn.execute(sql, params).fetchall()

    # -- records ------------------------------------------------------------------------------
    def load_all(self) -> dict[str, StoredServer]:
        records = {}
        for row in self._rows("SELECT * FROM pegboard.servers"):
            record = decode_record(row)
            if record is not None:
                records[record.server_id] = record
        return records

    def get(self, server_id: str) -> StoredServer | None:
        rows = self._rows("SELECT * FROM pegboard.servers WHERE server_id = %s", (server_id,))
        return decode_record(rows[0]) if rows else None

    def put(self, record: StoredServer) -> None:
        row = (
            record.server_id,
            record.fingerprint,
            None if record.tools is None else json.dumps(list(record.tools), ensure_ascii=False),
            json.dumps(record.tool_hashes, sort_keys=True),
            record.fetched_at,
        )
        sql = (
            "INSERT INTO pegboard.servers VALUES (%s,%s,%s,%s,%s) ON CONFLICT (server_id) DO"
            " UPDATE SET fingerprint = EXCLUDED.fingerprint, tools = EXCLUDED.tools,"
            " tool_hashes = EXCLUDED.tool_hashes, fetched_at = EXCLUDED.fetched_at"
        )
        self._write_all([(sql, row)], [("tools", record.server_id)])

    def delete(self, server_id: str) -> None:
        self._write_all(
            [
                ("DELETE FROM pegboard.servers WHERE server_id = %s", (server_id,)),
                ("DELETE FROM pegboard.content WHERE server_id = %s", (server_id,)),
            ],
            [("tools", server_id), ("content", server_id)],
        )

    def content(self, server_id: str, kind: str) -> StoredContent | None:
        rows = self._rows(
            "SELECT fingerprint, items FROM pegboard.content WHERE server_id = %s AND kind = %s",
            (server_id, kind),
        )
        if not rows:
            return None
        try:
            items = json.loads(rows[0][1])
        except ValueError:
            return None
        if not isinstance(items, list):
            return None
        return StoredContent(server_id, kind, str(rows[0][0]), tuple(items))

    def set_content(self, record: StoredContent) -> None:
        items = json.dumps(list(record.items), ensure_ascii=False)
        sql = (
            "INSERT INTO pegboard.content VALUES (%s,%s,%s,%s) ON CONFLICT (server_id, kind)"
            " DO UPDATE SET fingerprint = EXCLUDED.fingerprint, items = EXCLUDED.items"
        )
        row = (record.server_id, record.kind, record.fingerprint, items)
        self._write_all([(sql, row)], [("content", record.server_id)])

    def pins(self, server_id: str) -> dict[str, str]:
        rows = self._rows("SELECT tool, hash FROM pegboard.pins WHERE server_id = %s", (server_id,))
        return {str(tool): str(digest) for tool, digest in rows}

    def set_pins(self, server_id: str, pins: dict[str, str], *, replace: bool = False) -> None:
        statements: _Statements = []
        if replace:
            statements.append(("DELETE FROM pegboard.pins WHERE server_id = %s", (server_id,)))
        statements += [
            (
                "INSERT INTO pegboard.pins VALUES (%s,%s,%s) ON CONFLICT (server_id, tool)"
                " DO UPDATE SET hash = EXCLUDED.hash",
                (server_id, tool, digest),
            )
            for tool, digest in sorted(pins.items())
        ]
        self._write_all(statements, [("pins", server_id)])

    # -- the change feed ----------------------------------------------------------------------
    def version(self, table: SharedTable) -> int:
        rows = self._rows("SELECT max(seq) FROM pegboard.changes WHERE tbl = %s", (table,))
        return int(rows[0][0] or 0)

    def changes(self, since: int = 0) -> list[Change]:
        rows = self._rows(
            "SELECT seq, tbl, server_id, at, origin FROM pegboard.changes WHERE seq > %s"
            " ORDER BY seq",
            (since,),
        )
        return [Change(int(r[0]), r[1], str(r[2]), float(r[3]), str(r[4])) for r in rows]

    # -- notifications ------------------------------------------------------------------------
    async def listen(self, wake: Callable[[], None]) -> None:
        """Forever: ``wake()`` on each notification of a write, and after each (re)connection
        of the listening connection (see :meth:`~pegboard.postgres.Database.listen`)."""
        await self.db.listen(CHANNEL, lambda payload: wake(), on_connect=wake)

    # -- shared secrets and spent tokens ------------------------------------------------------
    def secret(self, name: str) -> bytes:
        """The secret called ``name``, made (random) by whichever replica asks first; every
        replica reads the same bytes. Never logged or shown."""
        with self._conn("write") as conn:
            conn.execute(
                "INSERT INTO pegboard.secrets VALUES (%s,%s,%s) ON CONFLICT (name) DO NOTHING",
                (name, os.urandom(SECRET_BYTES), time.time()),
            )
            row = conn.execute(
                "SELECT value FROM pegboard.secrets WHERE name = %s", (name,)
            ).fetchone()
        assert row is not None
        return bytes(row[0])

    def spend(self, token: str, expires_at: float) -> bool:
        """True the first time ``token`` is spent by any replica (until ``expires_at``)."""
        with self._conn("write") as conn, conn.transaction():
            conn.execute("DELETE FROM pegboard.spent WHERE expires_at <= %s", (time.time(),))
            cursor = conn.execute(
                "INSERT INTO pegboard.spent VALUES (%s,%s) ON CONFLICT (token) DO NOTHING",
                (token, expires_at),
            )
            return cursor.rowcount == 1

    def _write_all(
        self, statements: _Statements, changed: Sequence[tuple[SharedTable, str]] = ()
    ) -> None:
        """Run ``statements`` in one transaction, with a feed row and a notification per
        ``changed`` table."""
        now = time.time()
        with self._conn("write") as conn, conn.transaction():
            for sql, params in statements:
                conn.execute(sql, params)
            if not changed:
                return
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (FEED_LOCK,))
            for table, server_id in changed:
                row = conn.execute(
                    "INSERT INTO pegboard.changes (tbl, server_id, at, origin)"
                    " VALUES (%s,%s,%s,%s) RETURNING seq",
                    (table, server_id, now, self.origin),
                ).fetchone()
                assert row is not None
                payload = json.dumps(
                    {"seq": row[0], "table": table, "server_id": server_id, "origin": self.origin}
                )
                conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
            conn.execute(_PRUNE, (_store.FEED_KEEP,))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.db.release()

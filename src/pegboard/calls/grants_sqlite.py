"""The :class:`~pegboard.calls.grants.GrantStore` in a SQLite file (grants survive restarts)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any, cast

from pegboard.calls.grants import SCOPES, Grant, GrantKey, GrantScope
from pegboard.calls.sqlite import SqliteFile

_DDL = """
CREATE TABLE IF NOT EXISTS grants (
    principal       TEXT NOT NULL,
    tool_name       TEXT NOT NULL,
    definition_hash TEXT NOT NULL,
    arguments_hash  TEXT NOT NULL,
    scope           TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    granted_by      TEXT NOT NULL,
    granted_at      REAL NOT NULL,
    expires_at      REAL,
    PRIMARY KEY (principal, tool_name, definition_hash, arguments_hash, scope, session_id)
);
CREATE INDEX IF NOT EXISTS grants_by_session ON grants (session_id);
"""
_KEY = "principal = ? AND tool_name = ? AND definition_hash = ? AND arguments_hash = ?"
COLUMNS = (
    "principal, tool_name, definition_hash, arguments_hash, scope, session_id, granted_by, "
    "granted_at, expires_at"
)


class SqliteGrantStore:
    """Grants in ``path`` (see :mod:`pegboard.calls.grants` for what they cover)."""

    def __init__(self, path: str | Path) -> None:
        self._file = SqliteFile(path, _DDL)

    async def add(self, grant: Grant) -> None:
        k = grant.key
        row = (k.principal, k.tool_name, k.definition_hash, k.arguments_hash, grant.scope)
        values = (*row, grant.slot, grant.granted_by, grant.granted_at, grant.expires_at)

        def insert(db: sqlite3.Connection) -> None:
            db.execute(
                f"INSERT OR REPLACE INTO grants ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )

        await self._file.write(insert)

    async def find(self, key: GrantKey, session_id: str | None) -> Grant | None:
        return await self._take(key, session_id, use=False)

    async def consume(self, key: GrantKey, session_id: str | None) -> Grant | None:
        return await self._take(key, session_id, use=True)

    async def _take(self, key: GrantKey, session_id: str | None, *, use: bool) -> Grant | None:
        fields = (key.principal, key.tool_name, key.definition_hash, key.arguments_hash)
        now = time.time()

        def take(db: sqlite3.Connection) -> Grant | None:
            for scope in SCOPES:
                slot = "" if scope == "always" else (session_id or "")
                row = db.execute(
                    f"SELECT {COLUMNS} FROM grants WHERE {_KEY} AND scope = ? "
                    "AND session_id = ? AND (expires_at IS NULL OR expires_at > ?)",
                    (*fields, scope, slot, now),
                ).fetchone()
                if row is None:
                    continue
                if use and scope == "once":
                    db.execute(
                        f"DELETE FROM grants WHERE {_KEY} AND scope = ? AND session_id = ?",
                        (*fields, scope, slot),
                    )
                return grant_of_row(row)
            return None

        return await (self._file.write(take) if use else self._file.read(take))

    async def list(self, principal: str | None = None) -> list[Grant]:
        def select(db: sqlite3.Connection) -> list[Grant]:
            query = f"SELECT {COLUMNS} FROM grants"
            args: tuple[str, ...] = ()
            if principal is not None:
                query, args = query + " WHERE principal = ?", (principal,)
            return [grant_of_row(row) for row in db.execute(query + " ORDER BY granted_at", args)]

        return await self._file.read(select)

    async def revoke(self, key: GrantKey) -> int:
        fields = (key.principal, key.tool_name, key.definition_hash, key.arguments_hash)
        return await self._file.write(
            lambda db: db.execute(f"DELETE FROM grants WHERE {_KEY}", fields).rowcount
        )

    async def end_session(self, session_id: str) -> int:
        return await self._file.write(
            lambda db: (
                db.execute(
                    "DELETE FROM grants WHERE scope != 'always' AND session_id = ?", (session_id,)
                ).rowcount
            )
        )

    def close(self) -> None:
        self._file.close()


def grant_of_row(row: tuple[Any, ...]) -> Grant:
    """A row of :data:`COLUMNS` as the grant (the PostgreSQL store's too)."""
    principal, tool, definition, arguments, scope, slot, by, at, until = row
    key = GrantKey(principal, tool, definition, arguments)
    return Grant(key, cast(GrantScope, scope), slot or None, by, at, until)

"""The :class:`~pegboard.calls.grants.GrantStore` in the team store's PostgreSQL database.

Every replica reads and writes the same grants: an "allow always" given through one replica
covers the principal's calls on every other, and a ``once`` grant is used up by exactly one
call whichever replica runs it (one ``DELETE ... RETURNING``). The protocol is async; the
statements run on the process's shared pool in a worker thread
(:class:`~pegboard.postgres.Database`).
"""

from __future__ import annotations

import time
from typing import Any

import anyio.to_thread

from pegboard.calls.grants import SCOPES, Grant, GrantKey
from pegboard.calls.grants_sqlite import COLUMNS, grant_of_row
from pegboard.errors import StoreError
from pegboard.postgres import Database

_KEY = "principal = %s AND tool_name = %s AND definition_hash = %s AND arguments_hash = %s"


class PostgresGrantStore:
    """Grants in the team store (see :mod:`pegboard.calls.grants` for what they cover)."""

    def __init__(self, database: Database | str) -> None:
        if isinstance(database, str):
            database = Database(database)
        self.db = database.acquire()
        self._closed = False

    def _run(self, doing: str, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self.db.connection(doing, StoreError) as conn:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else [(cursor.rowcount,)]

    async def _q(self, doing: str, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return await anyio.to_thread.run_sync(self._run, doing, sql, params)

    async def add(self, grant: Grant) -> None:
        k = grant.key
        await self._q(
            "write",
            f"INSERT INTO pegboard.grants ({COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)"
            " ON CONFLICT (principal, tool_name, definition_hash, arguments_hash, scope,"
            " session_id) DO UPDATE SET granted_by = EXCLUDED.granted_by,"
            " granted_at = EXCLUDED.granted_at, expires_at = EXCLUDED.expires_at",
            (
                k.principal,
                k.tool_name,
                k.definition_hash,
                k.arguments_hash,
                grant.scope,
                grant.slot,
                grant.granted_by,
                grant.granted_at,
                grant.expires_at,
            ),
        )

    async def find(self, key: GrantKey, session_id: str | None) -> Grant | None:
        return await self._take(key, session_id, use=False)

    async def consume(self, key: GrantKey, session_id: str | None) -> Grant | None:
        return await self._take(key, session_id, use=True)

    async def _take(self, key: GrantKey, session_id: str | None, *, use: bool) -> Grant | None:
        fields = (key.principal, key.tool_name, key.definition_hash, key.arguments_hash)
        live = "(expires_at IS NULL OR expires_at > %s)"
        for scope in SCOPES:
            slot = "" if scope == "always" else (session_id or "")
            where = f"{_KEY} AND scope = %s AND session_id = %s AND {live}"
            if use and scope == "once":  # used up by exactly one call, whichever replica
                sql = f"DELETE FROM pegboard.grants WHERE {where} RETURNING {COLUMNS}"
            else:
                sql = f"SELECT {COLUMNS} FROM pegboard.grants WHERE {where}"
            rows = await self._q("read", sql, (*fields, scope, slot, time.time()))
            if rows:
                return grant_of_row(rows[0])
        return None

    async def list(self, principal: str | None = None) -> list[Grant]:
        sql = f"SELECT {COLUMNS} FROM pegboard.grants"
        params: tuple[str, ...] = ()
        if principal is not None:
            sql, params = sql + " WHERE principal = %s", (principal,)
        return [
            grant_of_row(r) for r in await self._q("read", sql + " ORDER BY granted_at", params)
        ]

    async def revoke(self, key: GrantKey) -> int:
        fields = (key.principal, key.tool_name, key.definition_hash, key.arguments_hash)
        rows = await self._q("write", f"DELETE FROM pegboard.grants WHERE {_KEY}", fields)
        return int(rows[0][0])

    async def end_session(self, session_id: str) -> int:
        rows = await self._q(
            "write",
            "DELETE FROM pegboard.grants WHERE scope != 'always' AND session_id = %s",
            (session_id,),
        )
        return int(rows[0][0])

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.db.release()

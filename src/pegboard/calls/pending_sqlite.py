"""The :class:`~pegboard.calls.pending.PendingApprovalStore` in a SQLite file.

Several processes may share the file (a gateway asks, ``pegboard approvals decide`` answers):
a decision taken in this process wakes its waiters at once, one taken elsewhere within
:data:`~pegboard.calls.pending.POLL_SECONDS`.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any, cast

from pegboard.calls.pending import (
    DEFAULT_TTL,
    EXPIRED,
    DecisionSignal,
    PendingApproval,
    decided,
    new_pending,
)
from pegboard.calls.request import ApprovalRequest, Decision
from pegboard.calls.sqlite import SqliteFile

_DDL = """
CREATE TABLE IF NOT EXISTS pending_approvals (
    id          TEXT PRIMARY KEY,
    request     TEXT NOT NULL,
    principal   TEXT NOT NULL,
    session_id  TEXT,
    asked_by    TEXT NOT NULL,
    created_at  REAL NOT NULL,
    expires_at  REAL NOT NULL,
    decision    TEXT,
    reason      TEXT NOT NULL,
    decided_by  TEXT,
    decided_at  REAL
);
CREATE INDEX IF NOT EXISTS pending_by_created ON pending_approvals (created_at);
CREATE TABLE IF NOT EXISTS pending_used (
    id      TEXT PRIMARY KEY,
    used_at REAL NOT NULL
);
"""
# Decided questions by decision, and the ones that lapsed unanswered (the PostgreSQL store's
# too, with %s placeholders): one aggregate, however many questions the history holds.
COUNTS = (
    "SELECT coalesce(decision, %s) AS d, count(*) FROM pending_approvals"
    " WHERE decision IS NOT NULL OR expires_at <= %s GROUP BY d"
)
COLUMNS = (
    "id, request, principal, session_id, asked_by, created_at, expires_at, decision, reason, "
    "decided_by, decided_at"
)


class SqlitePendingStore:
    """Pending approvals in ``path``."""

    def __init__(self, path: str | Path) -> None:
        self._file = SqliteFile(path, _DDL)
        self._signal = DecisionSignal()

    async def create(
        self,
        request: ApprovalRequest,
        *,
        principal: str,
        session_id: str | None,
        asked_by: str,
        ttl: float = DEFAULT_TTL,
    ) -> PendingApproval:
        item = new_pending(
            request, principal=principal, session_id=session_id, asked_by=asked_by, ttl=ttl
        )
        await self._file.write(lambda db: _put(db, item))
        return item

    async def get(self, id: str) -> PendingApproval | None:
        return await self._file.read(lambda db: _get(db, id))

    async def list(
        self, *, principal: str | None = None, include_closed: bool = False
    ) -> list[PendingApproval]:
        def select(db: sqlite3.Connection) -> list[PendingApproval]:
            query = f"SELECT {COLUMNS} FROM pending_approvals"
            args: tuple[str, ...] = ()
            if principal is not None:
                query, args = query + " WHERE principal = ?", (principal,)
            rows = db.execute(query + " ORDER BY created_at", args).fetchall()
            return [pending_of_row(row) for row in rows]

        items = await self._file.read(select)
        return [i for i in items if include_closed or i.status() == "pending"]

    async def decide(
        self, id: str, decision: Decision, *, decided_by: str, reason: str = ""
    ) -> PendingApproval:
        def answer(db: sqlite3.Connection) -> PendingApproval:
            item = decided(_get(db, id), id, decision, decided_by, reason)
            _put(db, item)
            return item

        item = await self._file.write(answer)
        self._signal.notify(id)
        return item

    async def wait(self, id: str) -> PendingApproval:
        return await self._signal.wait(id, self.get)

    async def use(self, id: str) -> bool:
        def spend(db: sqlite3.Connection) -> bool:
            cursor = db.execute(
                "INSERT OR IGNORE INTO pending_used VALUES (?, ?)", (id, time.time())
            )
            return cursor.rowcount == 1

        return await self._file.write(spend)

    async def counts(self) -> dict[str, int]:
        def count(db: sqlite3.Connection) -> list[tuple[str, int]]:
            rows = db.execute(COUNTS.replace("%s", "?"), (EXPIRED, time.time())).fetchall()
            return [(str(k), int(n)) for k, n in rows]

        return dict(await self._file.read(count))

    def close(self) -> None:
        self._file.close()


def _put(db: sqlite3.Connection, item: PendingApproval) -> None:
    db.execute(
        f"INSERT OR REPLACE INTO pending_approvals ({COLUMNS}) VALUES "
        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        row_of_pending(item),
    )


def row_of_pending(item: PendingApproval) -> tuple[Any, ...]:
    """``item`` as a row of :data:`COLUMNS` (the PostgreSQL store's too)."""
    request = json.dumps(item.request.to_json(), ensure_ascii=False, sort_keys=True)
    return (
        item.id,
        request,
        item.principal,
        item.session_id,
        item.asked_by,
        item.created_at,
        item.expires_at,
        item.decision,
        item.reason,
        item.decided_by,
        item.decided_at,
    )


def _get(db: sqlite3.Connection, id: str) -> PendingApproval | None:
    row = db.execute(f"SELECT {COLUMNS} FROM pending_approvals WHERE id = ?", (id,)).fetchone()
    return None if row is None else pending_of_row(row)


def pending_of_row(row: tuple[Any, ...]) -> PendingApproval:
    """A row of :data:`COLUMNS` as the record (the PostgreSQL store's too)."""
    id, request, principal, session_id, asked_by, created, expires = row[:7]
    decision, reason, decided_by, decided_at = row[7:]
    return PendingApproval(
        id=id,
        request=ApprovalRequest.from_json(json.loads(request)),
        principal=principal,
        session_id=session_id,
        asked_by=asked_by,
        created_at=created,
        expires_at=expires,
        decision=cast(Decision | None, decision),
        reason=reason,
        decided_by=decided_by,
        decided_at=decided_at,
    )

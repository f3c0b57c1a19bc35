"""The :class:`~pegboard.calls.pending.PendingApprovalStore` in the team store's PostgreSQL
database: a question asked through one replica can be decided through any other (or by
``pegboard approvals`` on any machine); the waiting call sees the decision within
:data:`~pegboard.calls.pending.POLL_SECONDS` (at once when decided in its own process). A
decision is one conditional ``UPDATE``, so two deciders racing cannot both win.
"""

from __future__ import annotations

import time
from typing import Any

import anyio.to_thread

from pegboard.calls.pending import (
    DEFAULT_TTL,
    EXPIRED,
    DecisionSignal,
    PendingApproval,
    decided,
    new_pending,
)
from pegboard.calls.pending_sqlite import COLUMNS, COUNTS, pending_of_row, row_of_pending
from pegboard.calls.request import ApprovalRequest, Decision
from pegboard.errors import StoreError
from pegboard.postgres import Database

USED_PREFIX = "approval-used:"
USED_KEPT_S = 24 * 3600.0  # far past any question's expiry, after which it approves nothing


class PostgresPendingStore:
    """Pending approvals in the team store."""

    def __init__(self, database: Database | str) -> None:
        if isinstance(database, str):
            database = Database(database)
        self.db = database.acquire()
        self._signal = DecisionSignal()
        self._closed = False

    def _rows(self, doing: str, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self.db.connection(doing, StoreError) as conn:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    async def _q(self, doing: str, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return await anyio.to_thread.run_sync(self._rows, doing, sql, params)

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
        await self._q(
            "write",
            f"INSERT INTO pegboard.pending_approvals ({COLUMNS}) VALUES"
            " (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
            row_of_pending(item),
        )
        return item

    async def get(self, id: str) -> PendingApproval | None:
        rows = await self._q(
            "read", f"SELECT {COLUMNS} FROM pegboard.pending_approvals WHERE id = %s", (id,)
        )
        return pending_of_row(rows[0]) if rows else None

    async def list(
        self, *, principal: str | None = None, include_closed: bool = False
    ) -> list[PendingApproval]:
        sql = f"SELECT {COLUMNS} FROM pegboard.pending_approvals"
        params: tuple[Any, ...] = ()
        if principal is not None:
            sql, params = sql + " WHERE principal = %s", (principal,)
        items = [
            pending_of_row(r) for r in await self._q("read", sql + " ORDER BY created_at", params)
        ]
        return [i for i in items if include_closed or i.status() == "pending"]

    async def decide(
        self, id: str, decision: Decision, *, decided_by: str, reason: str = ""
    ) -> PendingApproval:
        rows = await self._q(
            "write",
            "UPDATE pegboard.pending_approvals SET decision = %s, reason = %s, decided_by = %s,"
            " decided_at = %s WHERE id = %s AND decision IS NULL AND expires_at > %s"
            f" RETURNING {COLUMNS}",
            (decision, reason, decided_by, time.time(), id, time.time()),
        )
        if not rows:  # unknown, decided or expired: the same error as every store
            decided(await self.get(id), id, decision, decided_by, reason)
            raise AssertionError("unreachable: decided() raised")  # pragma: no cover
        self._signal.notify(id)
        return pending_of_row(rows[0])

    async def wait(self, id: str) -> PendingApproval:
        return await self._signal.wait(id, self.get)

    async def use(self, id: str) -> bool:
        # The spent tokens of the team store (migration 2): one INSERT ... ON CONFLICT, so two
        # replicas racing to use one approval cannot both win; kept a day past any question.
        rows = await self._q(
            "write",
            "INSERT INTO pegboard.spent VALUES (%s, %s) ON CONFLICT (token) DO NOTHING"
            " RETURNING token",
            (f"{USED_PREFIX}{id}", time.time() + USED_KEPT_S),
        )
        return bool(rows)

    async def counts(self) -> dict[str, int]:
        sql = COUNTS.replace("FROM pending_approvals", "FROM pegboard.pending_approvals")
        rows = await self._q("read", sql, (EXPIRED, time.time()))
        return {str(k): int(n) for k, n in rows}

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.db.release()

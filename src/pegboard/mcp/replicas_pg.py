"""Each replica's view of its servers in the team store, so ``pegboard servers status`` and the
admin page show every replica's, not only the machine's own.

Each replica supervises its own upstream children (stdio servers run once per replica), so a
server may be connected on one replica and failed on another. A serving replica
(``pegboard serve`` on a team store) writes one row per server (state, last error, backoff,
tool count, last listing) under its name (:func:`~pegboard.postgres.replica_name`: host and
process id, or ``$PEGBOARD_REPLICA``) with its host, pid and a heartbeat, at once when a
server's state or tools change and every ``[store] replica_stale_after / 3`` seconds
otherwise (:class:`ReplicaHeartbeat`). A replica whose heartbeat is older than
``replica_stale_after`` is shown as stale (killed, or cut off from the database); one that
stops cleanly removes its rows; rows of a replica not seen for :data:`FORGET_AFTER` seconds
are deleted by the next heartbeat of any replica.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from contextlib import suppress

import anyio
import anyio.to_thread

from pegboard.core.events import EventBus, ServerStatusChanged, ToolsChanged
from pegboard.errors import CatalogError
from pegboard.mcp.status import ReplicaView, ServerStatus
from pegboard.postgres import Database, replica_name, shown_url

logger = logging.getLogger("pegboard.mcp.catalog")

FORGET_AFTER = 3600.0  # s without a heartbeat before a replica's rows are deleted
SETTLE = 0.1  # s a burst of changes is gathered before one write

_UPSERT_REPLICA = (
    "INSERT INTO pegboard.replicas VALUES (%s,%s,%s,%s,%s) ON CONFLICT (replica) DO UPDATE"
    " SET host = EXCLUDED.host, pid = EXCLUDED.pid, seen_at = EXCLUDED.seen_at"
)
_UPSERT_SERVER = (
    "INSERT INTO pegboard.replica_servers VALUES (%s,%s,%s,%s,%s,%s,%s,%s)"
    " ON CONFLICT (replica, server_id) DO UPDATE SET status = EXCLUDED.status,"
    " error = EXCLUDED.error, error_at = EXCLUDED.error_at,"
    " backoff_until = EXCLUDED.backoff_until, tool_count = EXCLUDED.tool_count,"
    " fetched_at = EXCLUDED.fetched_at"
)
_VIEWS = (
    "SELECT r.replica, r.host, r.pid, r.seen_at, s.server_id, s.status, s.error, s.error_at,"
    " s.backoff_until, s.tool_count, s.fetched_at FROM pegboard.replicas r"
    " JOIN pegboard.replica_servers s ON s.replica = r.replica ORDER BY s.server_id, r.replica"
)


class PostgresReplicaBoard:
    """The replicas' views of their servers in the team store (see the module docstring)."""

    def __init__(self, database: Database, *, stale_after: float = 15.0) -> None:
        self.db = database.acquire()
        self.replica = replica_name()
        self.stale_after = stale_after
        self.started_at = time.time()
        self._closed = False

    def __repr__(self) -> str:
        return f"PostgresReplicaBoard({shown_url(self.db.url)}, {self.replica!r})"

    def publish(self, statuses: list[ServerStatus]) -> None:
        """This replica's view of ``statuses`` (all its servers) and its heartbeat, in one
        transaction; rows of servers it no longer has are removed. Raises
        :class:`~pegboard.errors.CatalogError` when the database cannot be written."""
        now = time.time()
        with self.db.connection("write", CatalogError) as conn, conn.transaction():
            conn.execute(
                _UPSERT_REPLICA,
                (self.replica, socket.gethostname(), os.getpid(), self.started_at, now),
            )
            conn.execute(
                "DELETE FROM pegboard.replica_servers WHERE replica = %s"
                " AND NOT (server_id = ANY(%s))",
                (self.replica, [s.server_id for s in statuses]),
            )
            for s in statuses:
                conn.execute(
                    _UPSERT_SERVER,
                    (
                        self.replica,
                        s.server_id,
                        s.state,
                        s.error,
                        s.at if s.error else None,
                        s.backoff_until,
                        s.tool_count,
                        s.fetched_at,
                    ),
                )
            conn.execute("DELETE FROM pegboard.replicas WHERE seen_at < %s", (now - FORGET_AFTER,))

    def withdraw(self) -> None:
        """Remove this replica's rows (it stops serving)."""
        with self.db.connection("write", CatalogError) as conn:
            conn.execute("DELETE FROM pegboard.replicas WHERE replica = %s", (self.replica,))

    def views(self) -> list[ReplicaView]:
        """Every replica's view of every server, by server then replica; ``stale`` when its
        heartbeat is older than :attr:`stale_after`."""
        now = time.time()
        with self.db.connection("read", CatalogError) as conn:
            rows = conn.execute(_VIEWS).fetchall()
        return [
            ReplicaView(
                replica=str(r[0]),
                host=str(r[1]),
                pid=int(r[2]),
                seen_at=float(r[3]),
                server_id=str(r[4]),
                state=str(r[5]),
                error=r[6],
                error_at=r[7],
                backoff_until=r[8],
                tool_count=int(r[9]),
                fetched_at=r[10],
                stale=now - float(r[3]) > self.stale_after,
            )
            for r in rows
        ]

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.db.release()


class ReplicaHeartbeat:
    """Keeps this replica's row of ``board`` current while it serves (run :meth:`run` in a
    task): at once after a server's state or tools change, else every third of the stale
    limit; withdrawn on a clean stop."""

    def __init__(
        self,
        board: PostgresReplicaBoard,
        statuses: Callable[[], list[ServerStatus]],
        events: EventBus,
    ) -> None:
        self.board = board
        self.statuses = statuses
        self.events = events
        self._due = anyio.Event()
        self._failing = False

    def _wake(self, event: object) -> None:
        self._due.set()

    async def run(self) -> None:
        interval = self.board.stale_after / 3
        off = [
            self.events.subscribe(ServerStatusChanged, self._wake),
            self.events.subscribe(ToolsChanged, self._wake),
        ]
        try:
            while True:
                await self._beat()
                with anyio.move_on_after(interval):
                    await self._due.wait()
                    await anyio.sleep(SETTLE)
                self._due = anyio.Event()
        finally:
            for unsubscribe in off:
                unsubscribe()
            # (when it cannot: stale after the limit, forgotten after FORGET_AFTER)
            with anyio.CancelScope(shield=True), anyio.move_on_after(5), suppress(CatalogError):
                await anyio.to_thread.run_sync(self.board.withdraw)

    async def _beat(self) -> None:
        try:
            await anyio.to_thread.run_sync(self.board.publish, self.statuses())
        except CatalogError as exc:
            if not self._failing:  # once per outage
                logger.warning("%s; this replica's server states are not shared meanwhile", exc)
            self._failing = True
            return
        self._failing = False

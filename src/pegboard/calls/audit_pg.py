"""The audit in the team store: every replica's records in one PostgreSQL table, read by
``pegboard audit tail`` on any machine; a bounded local spool while the database is lost.

Each record gets an id when it is made; a batch is inserted in one transaction with
``ON CONFLICT (record_id) DO NOTHING``. When the database cannot be written the batch goes to
the spool, ``<data dir>/audit-spool.jsonl`` (at most :data:`SPOOL_MAX_BYTES`), and a recovery
thread tries every :data:`RETRY_S` seconds: the spooled records are inserted first, in the
same transaction as the next batch, and the spool is emptied only after that commit. A crash
between the two re-inserts rows the table already has, which the conflict clause ignores:
nothing is lost and nothing is written twice. A full spool drops what does not fit and says
how many.

``[audit] on_failure = "refuse"``: while the database is lost, :meth:`PostgresAuditSink.check`
refuses every call (without waiting on the database: the recovery thread finds when it is
back), so no call runs unaudited.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import anyio.to_thread

from pegboard.calls.audit import Batching
from pegboard.errors import AuditUnavailable, StoreError
from pegboard.postgres import Database, replica_name, shown_url

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: one process per data directory
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("pegboard.calls.audit")

SPOOL_FILE = "audit-spool.jsonl"
SPOOL_MAX_BYTES = 16 * 1024 * 1024
RETRY_S = 1.0
_INSERT = (
    "INSERT INTO pegboard.audit (record_id, replica, time, tool, outcome, record)"
    " VALUES (%s,%s,%s,%s,%s,%s) ON CONFLICT (record_id) DO NOTHING"
)
Row = tuple[str, str, float, str, str, str]


class PostgresAuditSink:
    """An async audit sink on the team store (see the module docstring)."""

    def __init__(
        self,
        database: Database,
        spool: Path,
        *,
        on_failure: Literal["warn", "refuse"] = "warn",
        max_spool_bytes: int = SPOOL_MAX_BYTES,
    ) -> None:
        self.db = database.acquire()
        self.spool = spool
        self.on_failure = on_failure
        self.max_spool_bytes = max_spool_bytes
        self.replica = replica_name()
        self._lock = threading.Lock()
        self._down = self.spool.exists() and self.spool.stat().st_size > 0
        self._recovering = False
        self._closed = False
        self._batches = Batching(self._write_batch)
        if self._down:  # records of an earlier run wait in the spool
            self._recover_in_background()

    # -- the sink ----------------------------------------------------------------------------
    async def write(self, records: Sequence[Any]) -> None:
        """Store ``records`` (batched with those of concurrent calls); never raises."""
        await self._batches.submit(records)

    async def _write_batch(self, records: Sequence[Any]) -> None:
        rows = [self._row(r) for r in records]
        await anyio.to_thread.run_sync(self._store, rows)

    def __call__(self, record: Any) -> None:
        """The synchronous face (code without an event loop)."""
        self._store([self._row(record)])

    def _row(self, record: Any) -> Row:
        data = record.to_json() if hasattr(record, "to_json") else dict(record)
        text = json.dumps(data, ensure_ascii=False, sort_keys=True, default=str)
        when = float(data.get("time") or time.time())
        tool, outcome = str(data.get("tool", "")), str(data.get("outcome", ""))
        return (uuid.uuid4().hex, self.replica, when, tool, outcome, text)

    def _store(self, rows: list[Row]) -> None:
        with self._lock:
            down = self._down
            if down:  # straight to the spool: the recovery thread finds when it is back
                self._append_spool(rows)
        if down:
            self._recover_in_background()
            return
        with self._lock:
            try:
                self._insert(rows)
                return
            except StoreError as exc:
                if not self._down:
                    logger.warning(
                        "audit: %s; records are kept in %s until it is back", exc, self.spool
                    )
                self._down = True
                self._append_spool(rows)
        self._recover_in_background()

    def _insert(self, rows: list[Row]) -> None:
        """The spooled rows, then ``rows``, in one transaction; the spool is emptied after."""
        with self._spool_locked():
            spooled = self._read_spool()
            writing = self.db.connection("write the audit to", StoreError)
            with writing as conn, conn.transaction(), conn.cursor() as cursor:
                if spooled or rows:
                    cursor.executemany(_INSERT, [*spooled, *rows])
            if spooled:
                self.spool.unlink(missing_ok=True)
                logger.warning(
                    "audit: %d spooled records written to the team store %s",
                    len(spooled),
                    shown_url(self.db.url),
                )
        self._down = False

    # -- the spool ---------------------------------------------------------------------------
    @contextmanager
    def _spool_locked(self) -> Any:
        if fcntl is None:
            yield
            return
        self.spool.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{self.spool}.lock", "ab") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read_spool(self) -> list[Row]:
        try:
            text = self.spool.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        rows: list[Row] = []
        for line in text.splitlines():
            try:
                rid, replica, when, tool, outcome, record = json.loads(line)
            except ValueError:
                continue  # a line cut by a crash: its record was never acknowledged
            rows.append((str(rid), str(replica), float(when), str(tool), str(outcome), record))
        return rows

    def _append_spool(self, rows: list[Row]) -> None:
        lines = b"".join(json.dumps(list(r)).encode() + b"\n" for r in rows)
        with self._spool_locked():
            try:
                size = self.spool.stat().st_size
            except FileNotFoundError:
                size = 0
            if size + len(lines) > self.max_spool_bytes:
                logger.error(
                    "audit: the spool %s is full (%d bytes): %d records dropped",
                    self.spool,
                    self.max_spool_bytes,
                    len(rows),
                )
                return
            fd = os.open(self.spool, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, lines)
            finally:
                os.close(fd)

    def _recover_in_background(self) -> None:
        with self._lock:
            if self._recovering or self._closed:
                return
            self._recovering = True
        threading.Thread(target=self._recover, name="pegboard-audit-spool", daemon=True).start()

    def _recover(self) -> None:
        try:
            while not self._closed:
                time.sleep(RETRY_S)
                with self._lock:
                    try:
                        self._insert([])
                        return
                    except StoreError:
                        continue
        finally:
            self._recovering = False

    # -- before a call, reading, closing -----------------------------------------------------
    def check(self) -> None:
        """With ``on_failure="refuse"``: raise :class:`AuditUnavailable` while the team store
        cannot be written (known from the last write; never waits on the database)."""
        if self.on_failure == "refuse" and self._down:
            self._recover_in_background()
            raise AuditUnavailable(
                f"The audit cannot be written to the team store {shown_url(self.db.url)}, and "
                '[audit] on_failure = "refuse": the call was not run. Retry when the '
                "database is back."
            )

    def tail(self, count: int) -> list[dict[str, Any]]:
        return audit_tail(self.db, count)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.db.release()


def audit_tail(database: Database, count: int) -> list[dict[str, Any]]:
    """The last ``count`` records of every replica, oldest first, each with its ``replica``."""
    with database.connection("read the audit from", StoreError) as conn:
        rows = conn.execute(
            "SELECT replica, record FROM pegboard.audit ORDER BY time DESC, seq DESC LIMIT %s",
            (max(count, 0),),
        ).fetchall()
    found = []
    for replica, record in reversed(rows):
        try:
            item = json.loads(record)
        except ValueError:
            continue
        if isinstance(item, dict):
            found.append({**item, "replica": replica})
    return found

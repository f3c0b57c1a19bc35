"""The audit log file: one JSON line per tool call, bounded and rotating.

:class:`AuditLog` is an :class:`~pegboard.calls.audit.AsyncAuditSink`: the runtime hands it to
the gateway and CLI sessions, and every route's one :class:`CallRecord` becomes one line of
``<data dir>/audit.jsonl``. A call does not wait for its line: :meth:`AuditLog.write` queues
the record and returns, and one background writer thread per log (:class:`QueuedWriter`)
appends everything queued in one write (a batch), never on the event loop. What is queued is
written before anything in this process reads the log (:meth:`AuditLog.tail`, hence ``audit
tail``, the admin page and the service layer: :func:`flush_pending`), when the runtime stops
(:meth:`AuditLog.close`; ``pegboard serve`` stops it on EOF, SIGTERM, SIGINT and SIGHUP) and
at interpreter exit; only a process killed outright (SIGKILL, a crash) can lose the records
of its last moments. With ``on_failure="refuse"`` a call does wait until its record is
written, so no call's answer goes out unrecorded.

When the file would pass ``max_bytes`` it is rotated (``audit.jsonl.1`` ... ``.N``, the
oldest dropped), so the log never grows past ``max_bytes * (backups + 1)``. Several processes
(the gateway, CLI calls) may write at once: each batch is one ``O_APPEND`` write under an
advisory ``flock`` of ``audit.jsonl.lock`` (taken in the writer thread) that also guards
rotation. Writing never raises into a call: a failure is logged once and dropped
(``on_failure="warn"``, the default). With ``on_failure="refuse"`` :meth:`AuditLog.check`, run
before every call, refuses it while the log cannot be written.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import json
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread

from pegboard.errors import AuditUnavailable

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: appends stay atomic, rotation may race
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("pegboard.calls.audit")

AUDIT_FILE = "audit.jsonl"
DEFAULT_MAX_BYTES = 5 * 1024 * 1024
DEFAULT_BACKUPS = 3
MAX_LINE_BYTES = 16 * 1024  # a record is a few hundred bytes; a runaway field is cut
# How long the writer waits after a batch's first record (see QueuedWriter). A batch costs
# one wake-up, lock, stat, open, write and close whatever its size: at 2 ms, calls made one
# after another (~2 ms each through the gateway) each paid for their own batch (~0.1 ms of
# CPU per call); at 20 ms a batch carries ~10 of them. A reader in this process flushes
# first; another process sees a record at most this much later; SIGKILL loses at most this.
LINGER_S = 0.02


class AuditLog:
    """A bounded, rotating JSON-lines audit sink at ``path`` (see the module docstring)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
        on_failure: Literal["warn", "refuse"] = "warn",
    ) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self._on_failure = on_failure
        self._warned = False
        self._writer = QueuedWriter(self._append_all, name=f"pegboard-audit {self.path.name}")
        # The synchronous hand-off (pegboard.calls.audit.HandOff): under "warn" a call's
        # records are queued for the writer thread, never waited for.
        self.hand_off: Callable[[Sequence[Any]], None] | None = (
            None if on_failure == "refuse" else self._queue
        )
        _LOGS.add(self)

    @property
    def on_failure(self) -> Literal["warn", "refuse"]:
        return self._on_failure

    def _queue(self, records: Sequence[Any]) -> None:
        self._writer.submit(records)

    async def write(self, records: Sequence[Any]) -> None:
        """The :class:`~pegboard.calls.audit.AsyncAuditSink` face: queue ``records`` for the
        writer thread (file lock and all, never on the event loop), batched with the records
        of calls that finish meanwhile, and return; with ``on_failure="refuse"``, return once
        they are written. Never raises."""
        refuse = self.on_failure == "refuse"
        ticket = self._writer.submit(records, urgent=refuse)
        if refuse:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._writer.wait, ticket)

    def flush(self) -> None:
        """Wait until every record queued so far is written (or dropped by a failing write)."""
        self._writer.wait()

    def close(self) -> None:
        """Write what is queued and end the writer thread (a later write starts it again)."""
        self._writer.close()

    def check(self) -> None:
        """Before a call: with ``on_failure="refuse"``, raise :class:`AuditUnavailable` unless
        the log can be appended to now (a no-op under ``"warn"``)."""
        if self.on_failure != "refuse":
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
        except OSError as exc:
            raise AuditUnavailable(
                f"The audit log {self.path} cannot be written ({exc.strerror or exc}), and "
                '[audit] on_failure = "refuse": the call was not run. Fix the data directory '
                "or the disk, then retry."
            ) from None

    def __call__(self, record: Any) -> None:
        """Append ``record`` (a CallRecord dataclass or a mapping) now, after what is queued
        (for code without an event loop); never raises."""
        self._writer.wait(self._writer.submit([record], urgent=True))

    def _append_all(self, records: Sequence[Any]) -> None:
        try:
            self.append(*(_as_dict(r) for r in records))
        except Exception as exc:  # an audit failure must not fail the call it records
            if not self._warned or self.on_failure == "refuse":
                self._warned = True
                logger.warning(
                    "audit log %s cannot be written (%s); records dropped", self.path, exc
                )

    def append(self, *items: dict[str, Any]) -> None:
        """Append one line per item, in one locked write (rotating first if it would not fit)."""
        lines = []
        for data in items:
            data.setdefault("time", time.time())
            line = json.dumps(data, ensure_ascii=False, sort_keys=True, default=str)
            lines.append((line if len(line) <= MAX_LINE_BYTES else _truncated(data)).encode())
        raw = b"".join(line + b"\n" for line in lines)
        try:
            self._append_raw(raw)
        except FileNotFoundError:  # no data directory (yet, or any more): made on demand
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._append_raw(raw)

    def _append_raw(self, raw: bytes) -> None:
        with self._locked():
            try:
                size = os.stat(self.path).st_size
            except FileNotFoundError:
                size = 0
            if size and size + len(raw) > self.max_bytes:
                self._rotate()
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, raw)
            finally:
                os.close(fd)

    def _rotate(self) -> None:
        for index in range(self.backups, 0, -1):
            older = self._file(index - 1)
            if older.exists():
                older.replace(self._file(index))
        if self.backups == 0:
            self.path.unlink(missing_ok=True)

    def _file(self, index: int) -> Path:
        return self.path if index == 0 else self.path.with_name(f"{self.path.name}.{index}")

    @contextmanager
    def _locked(self) -> Iterator[None]:
        if fcntl is None:
            yield
            return
        # the descriptor alone (no Python file object around it: a batch's cost is mostly this)
        lock = os.open(f"{self.path}.lock", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        finally:
            os.close(lock)

    def tail(self, count: int) -> list[dict[str, Any]]:
        """The last ``count`` records, oldest first (unreadable lines are skipped); the
        records this process has queued for the file are written first."""
        flush_pending(self.path)
        kept: deque[dict[str, Any]] = deque(maxlen=max(count, 0))
        for index in range(self.backups, -1, -1):
            try:
                text = self._file(index).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                try:
                    item = json.loads(line)
                except ValueError:
                    continue
                if isinstance(item, dict):
                    kept.append(item)
        return list(kept)


class QueuedWriter:
    """Hands records to ``write`` in one background thread, the submitter never waiting.

    :meth:`submit` queues and returns a ticket; the thread (a daemon, started by the first
    submit) lingers :data:`LINGER_S` after the first record of a batch (so the call that queued
    it answers first, and records of calls finishing meanwhile join the batch), then takes
    everything queued at once and calls ``write`` with it. :meth:`wait` blocks until a ticket's
    records (default: all submitted) are through ``write``, cutting the linger short, as does
    an ``urgent`` submit; :meth:`close` waits for all and ends the thread. ``write`` must not
    raise (what it raises is logged and the batch counted as done).
    """

    def __init__(self, write: Callable[[list[Any]], None], *, name: str) -> None:
        self._write = write
        self._name = name
        self._new_locks()
        self._queued: list[Any] = []
        self._submitted = 0  # records submitted, ever
        self._written = 0  # records through write, ever
        # The writer thread while it runs: set when it starts, cleared when it ends (and in
        # a forked child, which has no such thread), so a submit need not ask is_alive()
        # (~3k instructions a record).
        self._thread: threading.Thread | None = None
        self._closing = False
        self._urgent = False  # someone waits: write without lingering
        _WRITERS.add(self)

    def _new_locks(self) -> None:
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  # the thread waits for records
        self._done = threading.Condition(self._lock)  # waiters wait for batches written

    def _forked(self) -> None:
        """In a forked child: no writer thread runs, and the lock may have been held by
        one in the parent; the next submit starts a thread of the child's."""
        self._new_locks()
        self._thread = None

    def submit(self, records: Sequence[Any], *, urgent: bool = False) -> int:
        """Queue ``records``; the ticket to :meth:`wait` for them (``urgent``: the caller
        will wait for it, so the thread does not linger)."""
        with self._lock:
            idle = not self._queued
            self._urgent = self._urgent or urgent
            self._queued.extend(records)
            self._submitted += len(records)
            ticket = self._submitted
            if self._thread is None:  # first use, or after a fork/close
                self._closing = False
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            elif idle or urgent:  # else the thread is lingering over, or writing, a batch
                self._work.notify()
        return ticket

    def wait(self, ticket: int | None = None, timeout: float | None = None) -> bool:
        """Block until the records of ``ticket`` (default: every one submitted so far) are
        written; False if ``timeout`` passed first. Without a running thread (stopped at
        interpreter exit) what is queued is written here."""
        with self._lock:
            target = self._submitted if ticket is None else ticket
            if self._thread is None:
                self._drain_here()
            elif self._written < target:
                self._urgent = True
                self._work.notify()
            return self._done.wait_for(lambda: self._written >= target, timeout)

    def close(self, timeout: float | None = 10.0) -> None:
        """Write what is queued, then end the thread."""
        with self._lock:
            self._closing = True
            self._work.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        with self._lock:
            self._drain_here()  # a thread that never ran, or ran out of time

    def _drain_here(self) -> None:
        # Called with the lock held; writes in the calling thread.
        while self._queued:
            batch, self._queued = self._queued, []
            self._lock.release()
            try:
                self._write_batch(batch)
            finally:
                self._lock.acquire()
            self._written += len(batch)
            self._done.notify_all()

    def _run(self) -> None:
        try:
            self._serve()
        finally:  # (also should anything escape: the next submit starts a thread again)
            with self._lock:
                if self._thread is threading.current_thread():
                    self._thread = None
                self._done.notify_all()

    def _serve(self) -> None:
        while True:
            with self._lock:
                while not self._queued and not self._closing:
                    self._work.wait()
                if not self._queued:  # closing, and nothing left
                    return
                if not (self._urgent or self._closing):
                    self._work.wait(LINGER_S)  # woken early by wait(), close() or urgency
                self._urgent = False
                batch, self._queued = self._queued, []
            self._write_batch(batch)
            with self._lock:
                self._written += len(batch)
                self._done.notify_all()

    def _write_batch(self, batch: list[Any]) -> None:
        try:
            self._write(batch)
        except Exception:  # pragma: no cover - write is documented not to raise
            logger.exception("%s: a batch of %d records was dropped", self._name, len(batch))


_LOGS: weakref.WeakSet[AuditLog] = weakref.WeakSet()  # every log of this process
_WRITERS: weakref.WeakSet[QueuedWriter] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for writer in list(_WRITERS):
        writer._forked()


if hasattr(os, "register_at_fork"):  # (POSIX: elsewhere there is no fork)
    os.register_at_fork(after_in_child=_after_fork_in_child)


def flush_pending(path: str | os.PathLike[str] | None = None) -> None:
    """Write what this process has queued for the audit file at ``path`` (default: for every
    audit file), so that a read of it right after a call sees that call."""
    wanted = None if path is None else os.path.abspath(path)
    for log in list(_LOGS):
        if wanted is None or os.path.abspath(log.path) == wanted:
            log.flush()


@atexit.register
def _flush_at_exit() -> None:
    for log in list(_LOGS):
        log._writer.wait(timeout=10.0)


def _as_dict(record: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return {name: getattr(record, name) for name in _field_names(type(record))}
    return dict(record)


@functools.cache
def _field_names(kind: type[Any]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(kind))


def _truncated(data: dict[str, Any]) -> str:
    short = {
        k: (v[:200] + "…" if isinstance(v, str) and len(v) > 200 else v) for k, v in data.items()
    }
    short["truncated"] = True
    line = json.dumps(short, ensure_ascii=False, sort_keys=True, default=str)
    if len(line) <= MAX_LINE_BYTES:
        return line
    return json.dumps({"time": data.get("time"), "truncated": True})

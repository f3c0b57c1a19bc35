"""The audit log file: one JSON line per tool call, bounded and rotating.

:class:`AuditLog` is an :class:`~pegboard.calls.audit.AsyncAuditSink`: the runtime hands it to
the gateway and CLI sessions, and every route's one :class:`CallRecord` becomes one line of
``<data dir>/audit.jsonl``, written in a worker thread in batches (the records of calls that
finish while a batch is written go in the next one). When the file would pass ``max_bytes``
it is rotated (``audit.jsonl.1`` ... ``.N``, the oldest dropped), so the log never grows past
``max_bytes * (backups + 1)``. Several processes (the gateway, CLI calls) may write at once:
each batch is one ``O_APPEND`` write under an advisory ``flock`` of ``audit.jsonl.lock``
(taken in the worker thread, never on the event loop) that also guards rotation. Writing
never raises into a call: a failure is logged once and dropped (``on_failure="warn"``, the
default). With ``on_failure="refuse"`` :meth:`AuditLog.check`, run before every call, refuses
it while the log cannot be written.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import anyio.to_thread

from pegboard.calls.audit import Batching
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
        self.on_failure = on_failure
        self._warned = False
        self._batches = Batching(self._write_batch)

    async def write(self, records: Sequence[Any]) -> None:
        """The :class:`~pegboard.calls.audit.AsyncAuditSink` face: append ``records`` in a
        worker thread (file lock and all, never on the event loop), batched with the records
        of calls that finish meanwhile; never raises."""
        await self._batches.submit(records)

    async def _write_batch(self, records: Sequence[Any]) -> None:
        await anyio.to_thread.run_sync(self._append_all, records)

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
        """Append ``record`` (a CallRecord dataclass or a mapping) now, in this thread (for
        code without an event loop); never raises."""
        self._append_all([record])

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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked():
            try:
                size = self.path.stat().st_size
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
        with open(f"{self.path}.lock", "ab") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def tail(self, count: int) -> list[dict[str, Any]]:
        """The last ``count`` records, oldest first (unreadable lines are skipped)."""
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


def _as_dict(record: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    return dict(record)


def _truncated(data: dict[str, Any]) -> str:
    short = {
        k: (v[:200] + "…" if isinstance(v, str) and len(v) > 200 else v) for k, v in data.items()
    }
    short["truncated"] = True
    line = json.dumps(short, ensure_ascii=False, sort_keys=True, default=str)
    if len(line) <= MAX_LINE_BYTES:
        return line
    return json.dumps({"time": data.get("time"), "truncated": True})

"""Token counts kept in the data directory, so a start need not load the encoding.

Deferral measures every tool definition and the prompt section it would inject; the
``o200k_base`` tables behind those counts take about 70 MB once loaded. The counts (16-byte
text digest, count) are written to one file a moment after new ones are made and read back at
the next start, so a catalog counted before costs no tokenizer at all.

The same file mechanics keep any table of ``(16-byte digest, count)`` records with the
:class:`KeptTable` methods, under a head line of its own (the digests of the tool definitions
that passed the listing checks: :mod:`pegboard.mcp.checked`).
"""

from __future__ import annotations

import atexit
import logging
import os
import struct
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

from pegboard.core.tokens import BpeTokenCounter

logger = logging.getLogger("pegboard")

# New counts are written this long after the first of them (a start counts them in a burst).
SAVE_DELAY_S = 1.0
_RECORD = struct.Struct("<16sI")


class KeptTable(Protocol):
    """What :func:`keep_counts` keeps: records to seed from, records to write, and the hook
    called when a new record was made. A table other than a :class:`BpeTokenCounter` also
    has ``kept_head`` (bytes): its file's first line."""

    on_new: Callable[[], None] | None

    def seed(self, counts: Iterable[tuple[bytes, int]]) -> None: ...

    def counts(self) -> list[tuple[bytes, int]]: ...


def _head(counter: KeptTable) -> bytes:
    if isinstance(counter, BpeTokenCounter):
        return f"pegboard-token-counts {counter.encoding}\n".encode()
    head = getattr(counter, "kept_head", None)  # another table's own file head
    if not isinstance(head, bytes):
        raise TypeError(f"{type(counter).__name__} has no kept_head")
    return head


def keep_counts(counter: KeptTable, path: Path) -> None:
    """Seed ``counter`` from ``path`` and have it write its counts back there when it makes
    new ones. A missing, damaged or other-encoding file (another head line: for token counts,
    another encoding) is ignored (and rewritten)."""
    counter.seed(read_counts(counter, path))
    lock, writing = threading.Lock(), threading.Lock()
    pending: list[threading.Timer] = []

    def save() -> None:
        with lock:
            pending.clear()
        with writing:  # one write at a time, each of the counts as they are when it starts
            write_counts(counter, path)

    def on_new() -> None:
        with lock:
            if pending:
                return
            timer = threading.Timer(SAVE_DELAY_S, save)
            timer.daemon = True
            pending.append(timer)
        timer.start()

    def at_exit() -> None:  # counts made in the last moment of a process are kept too
        with lock:
            waiting = list(pending)
        for timer in waiting:
            timer.cancel()
            save()

    counter.on_new = on_new
    atexit.register(at_exit)


def read_counts(counter: KeptTable, path: Path) -> list[tuple[bytes, int]]:
    try:
        data = path.read_bytes()
    except OSError:
        return []
    head = _head(counter)
    body = data[len(head) :]
    if not data.startswith(head) or len(body) % _RECORD.size:
        logger.warning("ignoring the unreadable %s %s", _what(head), path)
        return []
    return [(key, count) for key, count in _RECORD.iter_unpack(body)]


def _what(head: bytes) -> str:
    """``token counts`` for ``pegboard-token-counts ...``: the head's words, for messages."""
    return head.split(b" ", 1)[0].decode().removeprefix("pegboard-").replace("-", " ")


def write_counts(counter: KeptTable, path: Path) -> None:
    """Write ``counter``'s counts to ``path`` atomically (a temporary file renamed over it)."""
    records = b"".join(_RECORD.pack(key, count) for key, count in counter.counts())
    tmp: Path | None = None
    try:
        fd, name = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        tmp = Path(name)
        with os.fdopen(fd, "wb") as f:
            f.write(_head(counter) + records)
        tmp.replace(path)
    except FileNotFoundError:  # the data directory went away (a removed test home)
        return
    except OSError as exc:
        logger.warning("cannot write the %s %s: %s", _what(_head(counter)), path, exc)
        if tmp is not None:
            tmp.unlink(missing_ok=True)

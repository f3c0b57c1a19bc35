"""What the MCP catalog keeps: shared data and per-replica state, behind two protocols.

Shared data (:class:`CatalogStore`) is what every process (or gateway replica) serving the
same config must agree on: each server's last-known-good tool list, the trust pins, and the
listed resources, templates and prompts. Each of its tables (``tools``, ``pins``,
``content``) has a version, and every write appends to one change feed
(:meth:`CatalogStore.changes`), so a second process learns what changed without re-reading
everything. Per-replica state (:class:`ReplicaStateStore`) is what one process saw: each
server's state, last error and backoff. A second backend (PostgreSQL) implements
:class:`CatalogStore` in one class; the replica state can stay local.

:class:`MemoryCatalogStore` implements both in memory;
:class:`~pegboard.mcp.store_sqlite.SqliteCatalogStore` implements both in one SQLite file.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

SharedTable: TypeAlias = Literal["tools", "pins", "content"]
SHARED_TABLES: tuple[SharedTable, ...] = ("tools", "pins", "content")
# How many change-feed rows a store keeps at least (older ones may be pruned).
FEED_KEEP = 1000
SECRET_BYTES = 32


@dataclass(frozen=True, slots=True)
class StoredServer:
    """One server's cached tool list (shared). ``tools`` is None when never listed."""

    server_id: str
    fingerprint: str = ""
    tools: tuple[dict[str, Any], ...] | None = None
    tool_hashes: dict[str, str] = field(default_factory=dict)
    fetched_at: float | None = None


@dataclass(frozen=True, slots=True)
class StoredState:
    """What this replica last saw of a server: its state, last error and backoff."""

    server_id: str
    fingerprint: str = ""  # the launch definition it was seen with
    status: str = "cold"
    error: str | None = None
    error_at: float | None = None
    backoff_until: float | None = None


@dataclass(frozen=True, slots=True)
class StoredContent:
    """A server's last listed resources, templates or prompts (``kind``), as MCP JSON.

    ``fingerprint`` is the server's launch definition when listed: another one means another
    server, whose content is not this one's.
    """

    server_id: str
    kind: str
    fingerprint: str
    items: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Change:
    """One write to a shared table: its feed position, the table and the server it touched;
    ``origin`` is the writing store's :attr:`ChangeListener.origin` ("" where not kept)."""

    seq: int
    table: SharedTable
    server_id: str
    at: float
    origin: str = ""


class CatalogStore(Protocol):
    """The catalog's shared data: tool lists, trust pins, resources and prompts."""

    @property
    def persistent(self) -> bool: ...

    def load_all(self) -> dict[str, StoredServer]: ...

    def get(self, server_id: str) -> StoredServer | None: ...

    def put(self, record: StoredServer) -> None: ...

    def delete(self, server_id: str) -> None:
        """Forget the server's tool list and content (its pins stay: trust is kept)."""
        ...

    def pins(self, server_id: str) -> dict[str, str]: ...

    def set_pins(self, server_id: str, pins: dict[str, str], *, replace: bool = False) -> None: ...

    def content(self, server_id: str, kind: str) -> StoredContent | None: ...

    def set_content(self, record: StoredContent) -> None: ...

    def version(self, table: SharedTable) -> int:
        """The feed position of the table's last write (0: never written)."""
        ...

    def changes(self, since: int = 0) -> list[Change]:
        """Writes after feed position ``since``, oldest first."""
        ...

    def secret(self, name: str) -> bytes: ...

    def spend(self, token: str, expires_at: float) -> bool: ...

    def close(self) -> None: ...


@runtime_checkable
class ChangeListener(Protocol):
    """A store that tells at once when another process wrote to it (PostgreSQL's
    ``LISTEN/NOTIFY``); the catalog then follows its change feed (:mod:`pegboard.mcp.feed`)."""

    @property
    def origin(self) -> str:
        """This store object's writer id, kept in each of its feed rows (its own writes are
        not followed)."""
        ...

    async def listen(self, wake: Callable[[], None]) -> None:
        """Forever: call ``wake()`` after each notification of a write, and after each
        (re)connection (writes may have been missed meanwhile)."""
        ...


@runtime_checkable
class ReplicaStateStore(Protocol):
    """One replica's view of each server (state, last error, backoff)."""

    def load_states(self) -> dict[str, StoredState]: ...

    def put_state(self, record: StoredState) -> None: ...

    def delete_state(self, server_id: str) -> None: ...


class ChangeFeed:
    """The change feed of a store kept in memory (positions start at 1)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: list[Change] = []
        self._seq = 0
        self._versions: dict[SharedTable, int] = {}

    def append(self, table: SharedTable, server_id: str) -> None:
        with self._lock:
            self._seq += 1
            self._rows.append(Change(self._seq, table, server_id, time.time()))
            self._versions[table] = self._seq
            if len(self._rows) > 2 * FEED_KEEP:
                del self._rows[:-FEED_KEEP]

    def version(self, table: SharedTable) -> int:
        return self._versions.get(table, 0)

    def since(self, seq: int) -> list[Change]:
        with self._lock:
            return [c for c in self._rows if c.seq > seq]


class MemoryCatalogStore:
    """Both store contracts, in memory only (the default when no store is given)."""

    persistent = False

    def __init__(self) -> None:
        self._records: dict[str, StoredServer] = {}
        self._states: dict[str, StoredState] = {}
        self._pins: dict[str, dict[str, str]] = {}
        self._content: dict[tuple[str, str], StoredContent] = {}
        self._feed = ChangeFeed()
        self._secrets: dict[str, bytes] = {}
        self._spent: dict[str, float] = {}

    def secret(self, name: str) -> bytes:
        """The secret called ``name``, made (random) on first use; see the SQLite store."""
        return self._secrets.setdefault(name, os.urandom(SECRET_BYTES))

    def spend(self, token: str, expires_at: float) -> bool:
        """True the first time ``token`` is spent (until ``expires_at``), False after."""
        now = time.time()
        self._spent = {t: e for t, e in self._spent.items() if e > now}
        if token in self._spent:
            return False
        self._spent[token] = expires_at
        return True

    # -- shared -------------------------------------------------------------------------------
    def load_all(self) -> dict[str, StoredServer]:
        return dict(self._records)

    def get(self, server_id: str) -> StoredServer | None:
        return self._records.get(server_id)

    def put(self, record: StoredServer) -> None:
        self._records[record.server_id] = record
        self._feed.append("tools", record.server_id)

    def delete(self, server_id: str) -> None:
        self._records.pop(server_id, None)
        for key in [k for k in self._content if k[0] == server_id]:
            del self._content[key]
        self._feed.append("tools", server_id)
        self._feed.append("content", server_id)

    def pins(self, server_id: str) -> dict[str, str]:
        return dict(self._pins.get(server_id, {}))

    def set_pins(self, server_id: str, pins: dict[str, str], *, replace: bool = False) -> None:
        current = {} if replace else self._pins.get(server_id, {})
        self._pins[server_id] = {**current, **pins}
        self._feed.append("pins", server_id)

    def content(self, server_id: str, kind: str) -> StoredContent | None:
        return self._content.get((server_id, kind))

    def set_content(self, record: StoredContent) -> None:
        self._content[(record.server_id, record.kind)] = record
        self._feed.append("content", record.server_id)

    def version(self, table: SharedTable) -> int:
        return self._feed.version(table)

    def changes(self, since: int = 0) -> list[Change]:
        return self._feed.since(since)

    # -- per replica --------------------------------------------------------------------------
    def load_states(self) -> dict[str, StoredState]:
        return dict(self._states)

    def put_state(self, record: StoredState) -> None:
        self._states[record.server_id] = record

    def delete_state(self, server_id: str) -> None:
        self._states.pop(server_id, None)

    def close(self) -> None:
        self._records.clear()
        self._states.clear()

"""Approval grants: what a human's yes covers, for how long, behind one protocol.

A grant is keyed by the principal, the tool (wire name and definition hash) and the hash of the
exact arguments, so a changed tool or other arguments are never covered. Its scope:

- ``once``: the next matching call of that session uses it up (an approval decided ahead of
  the call, e.g. in a queue, then resumed);
- ``session``: every matching call of that session;
- ``always``: every matching call of any session of that principal (as long as the store
  keeps it: the memory store for the process, the SQLite store across restarts).

A grant with ``expires_at`` covers nothing after that time (a sessionless client's "allow for
a while" is a session grant that lapses).

:class:`MemoryGrantStore` and :class:`~pegboard.calls.grants_sqlite.SqliteGrantStore`
implement :class:`GrantStore`; one shared test suite runs against both.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias, runtime_checkable

GrantScope: TypeAlias = Literal["once", "session", "always"]
SCOPES: tuple[GrantScope, ...] = ("always", "session", "once")  # the order consume prefers


@dataclass(frozen=True, slots=True)
class GrantKey:
    """What one grant covers: this principal, this tool definition, these arguments."""

    principal: str
    tool_name: str
    definition_hash: str
    arguments_hash: str


@dataclass(frozen=True, slots=True)
class Grant:
    """One yes. ``session_id`` scopes ``once`` and ``session`` grants (ignored for ``always``)."""

    key: GrantKey
    scope: GrantScope
    session_id: str | None = None
    granted_by: str = ""
    granted_at: float = field(default_factory=time.time)
    expires_at: float | None = None

    def expired(self, now: float | None = None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or time.time())

    @property
    def slot(self) -> str:
        """The session part of the grant's identity ("" for ``always``)."""
        return "" if self.scope == "always" else (self.session_id or "")


@runtime_checkable
class GrantStore(Protocol):
    """Where grants live (memory, SQLite; PostgreSQL next, on the same protocol)."""

    async def add(self, grant: Grant) -> None:
        """Keep ``grant`` (the same key, scope and session again replaces it)."""
        ...

    async def find(self, key: GrantKey, session_id: str | None) -> Grant | None:
        """The grant that would cover a call of ``key`` in ``session_id`` (nothing used up)."""
        ...

    async def consume(self, key: GrantKey, session_id: str | None) -> Grant | None:
        """The grant covering a call of ``key`` in ``session_id``, or None; a ``once``
        grant is used up (``always`` and ``session`` grants are preferred to it)."""
        ...

    async def list(self, principal: str | None = None) -> list[Grant]:
        """Every grant (of ``principal``), oldest first."""
        ...

    async def revoke(self, key: GrantKey) -> int:
        """Drop every grant of ``key``; how many were dropped."""
        ...

    async def end_session(self, session_id: str) -> int:
        """Drop the ``once`` and ``session`` grants of a finished session; how many."""
        ...


class MemoryGrantStore:
    """A :class:`GrantStore` in this process's memory (a lock: calls may come from threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._grants: dict[tuple[GrantKey, GrantScope, str], Grant] = {}

    async def add(self, grant: Grant) -> None:
        with self._lock:
            self._grants.pop((grant.key, grant.scope, grant.slot), None)
            self._grants[(grant.key, grant.scope, grant.slot)] = grant

    async def find(self, key: GrantKey, session_id: str | None) -> Grant | None:
        return self._take(key, session_id, use=False)

    async def consume(self, key: GrantKey, session_id: str | None) -> Grant | None:
        return self._take(key, session_id, use=True)

    def _take(self, key: GrantKey, session_id: str | None, *, use: bool) -> Grant | None:
        with self._lock:
            for scope in SCOPES:
                slot = "" if scope == "always" else (session_id or "")
                grant = self._grants.get((key, scope, slot))
                if grant is not None and grant.expired():
                    del self._grants[(key, scope, slot)]
                    grant = None
                if grant is not None:
                    if use and scope == "once":
                        del self._grants[(key, scope, slot)]
                    return grant
        return None

    async def list(self, principal: str | None = None) -> list[Grant]:
        with self._lock:
            grants = list(self._grants.values())
        return [g for g in grants if principal is None or g.key.principal == principal]

    async def revoke(self, key: GrantKey) -> int:
        with self._lock:
            doomed = [k for k in self._grants if k[0] == key]
            for k in doomed:
                del self._grants[k]
        return len(doomed)

    async def end_session(self, session_id: str) -> int:
        with self._lock:
            doomed = [k for k in self._grants if k[1] != "always" and k[2] == session_id]
            for k in doomed:
                del self._grants[k]
        return len(doomed)

"""Pending approvals: a gated call waiting for someone's decision, behind one protocol.

Each record says what is asked (:class:`~pegboard.calls.request.ApprovalRequest`), for whom
(principal, session), who asked (the route or client), until when (expiry) and, once decided,
the decision, its reason, who decided and when. The call path creates one per question
(:func:`~pegboard.calls.approval.authorise`), records the handler's answer with :meth:`decide`,
and a decision taken elsewhere (an admin queue, a resumed MCP round) reaches the waiting call
through :meth:`wait`. :class:`MemoryPendingStore` and
:class:`~pegboard.calls.pending_sqlite.SqlitePendingStore` implement
:class:`PendingApprovalStore`; one shared test suite runs against both.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal, Protocol, TypeAlias, runtime_checkable

import anyio

from pegboard.calls.request import ApprovalRequest, Decision
from pegboard.errors import ApprovalNotPending

PendingStatus: TypeAlias = Literal["pending", "decided", "expired"]
EXPIRED = "expired"  # what counts() names the questions that lapsed unanswered
DEFAULT_TTL = 15 * 60.0  # seconds a question stays open
POLL_SECONDS = 0.25  # how often wait() looks for a decision taken by another process


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """One question and, once answered, its answer."""

    id: str
    request: ApprovalRequest
    principal: str
    session_id: str | None
    asked_by: str
    created_at: float
    expires_at: float
    decision: Decision | None = None
    reason: str = ""
    decided_by: str | None = None
    decided_at: float | None = None

    def status(self, now: float | None = None) -> PendingStatus:
        if self.decision is not None:
            return "decided"
        return "expired" if (now or time.time()) >= self.expires_at else "pending"


def new_pending(
    request: ApprovalRequest,
    *,
    principal: str,
    session_id: str | None,
    asked_by: str,
    ttl: float,
) -> PendingApproval:
    now = time.time()
    return PendingApproval(
        uuid.uuid4().hex, request, principal, session_id, asked_by, now, now + ttl
    )


def tally(items: Iterable[PendingApproval], now: float | None = None) -> dict[str, int]:
    """:meth:`PendingApprovalStore.counts` of ``items``."""
    now = now or time.time()
    counted: dict[str, int] = {}
    for item in items:
        status = item.status(now)
        if status != "pending":
            name = item.decision if item.decision is not None else EXPIRED
            counted[name] = counted.get(name, 0) + 1
    return counted


def decided(
    item: PendingApproval | None, id: str, decision: Decision, decided_by: str, reason: str
) -> PendingApproval:
    """``item`` with the decision, or :class:`ApprovalNotPending` (unknown, decided, expired)."""
    if item is None:
        raise ApprovalNotPending(f"No approval request {id!r}; list the pending ones first.")
    status = item.status()
    if status != "pending":
        raise ApprovalNotPending(
            f"Approval request {id} is {status} and cannot be decided again"
            + (f" (it was: {item.decision} by {item.decided_by})." if item.decision else ".")
        )
    return replace(
        item, decision=decision, reason=reason, decided_by=decided_by, decided_at=time.time()
    )


@runtime_checkable
class PendingApprovalStore(Protocol):
    """Where open questions live (memory, SQLite; PostgreSQL next, on the same protocol)."""

    async def create(
        self,
        request: ApprovalRequest,
        *,
        principal: str,
        session_id: str | None,
        asked_by: str,
        ttl: float = DEFAULT_TTL,
    ) -> PendingApproval: ...

    async def get(self, id: str) -> PendingApproval | None: ...

    async def list(
        self, *, principal: str | None = None, include_closed: bool = False
    ) -> list[PendingApproval]:
        """The open questions (of ``principal``), oldest first; with ``include_closed`` the
        decided and expired ones too."""
        ...

    async def decide(
        self, id: str, decision: Decision, *, decided_by: str, reason: str = ""
    ) -> PendingApproval:
        """Answer an open question; :class:`~pegboard.errors.ApprovalNotPending` otherwise."""
        ...

    async def wait(self, id: str) -> PendingApproval:
        """The record once it is decided or expired (bound a shorter wait with
        ``anyio.move_on_after``); :class:`~pegboard.errors.ApprovalNotPending` for an unknown
        id."""
        ...

    async def use(self, id: str) -> bool:
        """Spend the approval of question ``id`` (an approval once covers one call): True the
        first time, by any process on the same data, and False ever after (restarts too)."""
        ...

    async def counts(self) -> dict[str, int]:
        """How many questions were decided, by decision, and how many lapsed unanswered
        (:data:`EXPIRED`): every decision, whoever took it (a terminal, an MCP client, the
        admin page, ``pegboard approvals``), from any process on the same data."""
        ...


class DecisionSignal:
    """Wakes this process's waiters at once when a question is decided (others poll)."""

    def __init__(self) -> None:
        self._events: dict[str, set[anyio.Event]] = {}
        self._lock = threading.Lock()

    def notify(self, id: str) -> None:
        with self._lock:
            events = self._events.pop(id, set())
        for event in events:
            event.set()

    async def wait(self, id: str, get: _Getter) -> PendingApproval:
        while True:
            event = anyio.Event()  # registered before the read: no decision slips between
            with self._lock:
                self._events.setdefault(id, set()).add(event)
            try:
                item = await get(id)
                if item is None:
                    raise ApprovalNotPending(f"No approval request {id!r}.")
                now = time.time()
                if item.status(now) != "pending":
                    return item
                with anyio.move_on_after(min(POLL_SECONDS, item.expires_at - now)):
                    await event.wait()
            finally:
                with self._lock:
                    self._events.get(id, set()).discard(event)


class _Getter(Protocol):
    async def __call__(self, id: str) -> PendingApproval | None: ...


class MemoryPendingStore:
    """A :class:`PendingApprovalStore` in this process's memory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, PendingApproval] = {}
        self._used: set[str] = set()
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
        with self._lock:
            self._items[item.id] = item
        return item

    async def get(self, id: str) -> PendingApproval | None:
        with self._lock:
            return self._items.get(id)

    async def list(
        self, *, principal: str | None = None, include_closed: bool = False
    ) -> list[PendingApproval]:
        now = time.time()
        with self._lock:
            items = sorted(self._items.values(), key=lambda i: i.created_at)
        return [
            i
            for i in items
            if (principal is None or i.principal == principal)
            and (include_closed or i.status(now) == "pending")
        ]

    async def decide(
        self, id: str, decision: Decision, *, decided_by: str, reason: str = ""
    ) -> PendingApproval:
        with self._lock:
            item = decided(self._items.get(id), id, decision, decided_by, reason)
            self._items[id] = item
        self._signal.notify(id)
        return item

    async def wait(self, id: str) -> PendingApproval:
        return await self._signal.wait(id, self.get)

    async def use(self, id: str) -> bool:
        with self._lock:
            first = id not in self._used
            self._used.add(id)
        return first

    async def counts(self) -> dict[str, int]:
        with self._lock:
            items = list(self._items.values())
        return tally(items)

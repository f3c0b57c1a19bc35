"""Approvals: the questions gated calls wait on, and deciding them (admin page, CLI)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pegboard.calls.pending import PendingApproval, PendingApprovalStore
from pegboard.calls.request import Decision
from pegboard.core.events import ApprovalDecided
from pegboard.errors import ApprovalNotPending

if TYPE_CHECKING:
    from pegboard.service.app import Service

Verdict = Literal["once", "while", "deny"]
DECISIONS: dict[Verdict, Decision] = {
    "once": "allow_once",
    "while": "allow_session",
    "deny": "deny",
}
HISTORY = 200  # decided and expired questions shown


@dataclass(frozen=True, slots=True)
class Approvals:
    """The open questions (oldest first) and the recent closed ones (newest first)."""

    pending: list[PendingApproval]
    history: list[PendingApproval]


class ApprovalService:
    """The runtime's pending-approval store (a file in the data directory by default, so a
    gateway's questions are decided from any process)."""

    def __init__(self, service: Service) -> None:
        self._service = service

    @property
    def _store(self) -> PendingApprovalStore:
        store: PendingApprovalStore = self._service.runtime.calls.pending
        return store

    async def listed(self, *, history: int = HISTORY) -> Approvals:
        everything = await self._store.list(include_closed=True)
        now = time.time()
        return Approvals(
            [a for a in everything if a.status(now) == "pending"],
            [a for a in reversed(everything) if a.status(now) != "pending"][:history],
        )

    async def count_pending(self) -> int:
        return len(await self._store.list())

    async def counts(self) -> dict[str, int]:
        """Every decision taken (by decision) and every question that lapsed, whichever route
        or process took it (see :meth:`~pegboard.calls.pending.PendingApprovalStore.counts`)."""
        return await self._store.counts()

    async def find(self, prefix: str) -> PendingApproval:
        """The question whose id starts with ``prefix`` (the first 8 characters suffice)."""
        found = [a for a in await self._store.list(include_closed=True) if a.id.startswith(prefix)]
        if len(found) != 1 or not prefix:
            what = "No" if not found else "More than one"
            raise ApprovalNotPending(
                f"{what} approval request matches {prefix!r}; see `pegboard approvals list`."
            )
        return found[0]

    async def decide(
        self, prefix: str, verdict: Verdict, *, decided_by: str, reason: str = ""
    ) -> PendingApproval:
        """Approve once, approve for a while, or deny (with ``reason``) the open question
        ``prefix``; :class:`~pegboard.errors.ApprovalNotPending` when it is not open."""
        item = await self.find(prefix)
        decided = await self._store.decide(
            item.id, DECISIONS[verdict], decided_by=decided_by, reason=reason.strip()[:500]
        )
        self._service.runtime.events.publish(ApprovalDecided(decided))
        return decided

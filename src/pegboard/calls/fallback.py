"""Approvals while the team store is lost: the question is still asked, the answer kept here.

A team store's grants and pending approvals live in PostgreSQL. When it cannot be reached
(:class:`~pegboard.errors.StoreError`), a gated call is still asked to its client as usual
(an elicitation on the call's own connection) instead of failing:

- the question is a record of this process's memory (the admin pages of other replicas do not
  see it; the audit records the call, spooled until the database is back);
- a yes "for this session" or "always" is kept in this process's memory and covers the
  matching calls this replica runs, and is written to the store at the first approval step
  after the database is back (grants are idempotent: writing one late adds nothing twice);
- a ``once`` grant (an approval decided ahead of its call, in the queue) is refused with one
  line: kept here and written later it could be used once here and once more on another
  replica, so it is not kept at all. A yes for this one call (the usual "allow once") needs no
  grant: the call runs at once, on the replica that asked.

Grants the store holds are not seen while it is lost: their calls are asked again (never
allowed without a yes). Modern (2026-07-28) clients answer in a second request that any
replica may receive, whose once-only use needs the store: the gateway refuses those calls
with one line meanwhile (:data:`STORE_LOST_LINE`).

``[limits]`` buckets (:class:`FallbackRateLimiter`) are counted in this process's memory
meanwhile: calls keep working and each replica holds the limit on its own, so a principal spread
over N replicas may pass up to N times the limit until the store is back, when the shared
buckets count again.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from pegboard.calls.grants import Grant, GrantKey, GrantStore, MemoryGrantStore
from pegboard.calls.limits import Limit, MemoryRateLimiter, RateLimiter
from pegboard.calls.pending import (
    DEFAULT_TTL,
    MemoryPendingStore,
    PendingApproval,
    PendingApprovalStore,
)
from pegboard.calls.request import ApprovalRequest, Decision
from pegboard.errors import StoreError

logger = logging.getLogger("pegboard.calls.approval")

STORE_LOST_LINE = (
    "The team store (PostgreSQL) is unreachable, so an approval answered in a second request "
    "cannot be checked to be used only once across replicas; the call was not run. Retry it "
    "when the store is back."
)
ONCE_LOST_LINE = (
    "The team store (PostgreSQL) is unreachable: an approval for one later call cannot be kept "
    "(another replica could use it too); approve the call when it is asked, or when the store "
    "is back."
)


class FallbackGrantStore:
    """``primary`` (the team store's grants), falling back to this process's memory while it
    raises :class:`~pegboard.errors.StoreError` (see the module docstring)."""

    def __init__(self, primary: GrantStore) -> None:
        self.primary = primary
        self._local = MemoryGrantStore()
        self._unwritten: list[Grant] = []
        self._lock = threading.Lock()

    async def _flush(self) -> None:
        """Write the grants kept meanwhile (StoreError while the store is still lost)."""
        while self._unwritten:
            grant = self._unwritten[0]
            await self.primary.add(grant)
            with self._lock:
                if self._unwritten and self._unwritten[0] is grant:
                    self._unwritten.pop(0)
            logger.info("wrote an approval grant kept while the team store was lost")

    async def add(self, grant: Grant) -> None:
        try:
            await self._flush()
            await self.primary.add(grant)
        except StoreError as exc:
            if grant.scope == "once":
                raise StoreError(ONCE_LOST_LINE) from exc
            logger.warning("%s; the approval is kept on this replica until it is back", exc)
            await self._local.add(grant)
            with self._lock:
                self._unwritten.append(grant)

    async def find(self, key: GrantKey, session_id: str | None) -> Grant | None:
        try:
            await self._flush()
            return await self.primary.find(key, session_id)
        except StoreError:
            return await self._local.find(key, session_id)

    async def consume(self, key: GrantKey, session_id: str | None) -> Grant | None:
        try:
            await self._flush()
            return await self.primary.consume(key, session_id)
        except StoreError:
            return await self._local.consume(key, session_id)  # never a once grant: see add

    async def list(self, principal: str | None = None) -> list[Grant]:
        try:
            await self._flush()
            return await self.primary.list(principal)
        except StoreError:
            return await self._local.list(principal)

    async def revoke(self, key: GrantKey) -> int:
        with self._lock:
            self._unwritten = [g for g in self._unwritten if g.key != key]
        local = await self._local.revoke(key)
        return local + await self.primary.revoke(key)

    async def end_session(self, session_id: str) -> int:
        with self._lock:
            self._unwritten = [
                g for g in self._unwritten if g.scope == "always" or g.slot != session_id
            ]
        local = await self._local.end_session(session_id)
        try:
            return local + await self.primary.end_session(session_id)
        except StoreError:
            return local

    def close(self) -> None:
        if self._unwritten:
            logger.warning(
                "%d approval grant(s) kept while the team store was lost were not written",
                len(self._unwritten),
            )
        if callable(close := getattr(self.primary, "close", None)):
            close()


class FallbackPendingStore:
    """``primary`` (the team store's pending approvals); a question that cannot be written
    there is kept in this process's memory and answered there (see the module docstring)."""

    def __init__(self, primary: PendingApprovalStore) -> None:
        self.primary = primary
        self._local = MemoryPendingStore()
        self._here: set[str] = set()

    async def create(
        self,
        request: ApprovalRequest,
        *,
        principal: str,
        session_id: str | None,
        asked_by: str,
        ttl: float = DEFAULT_TTL,
    ) -> PendingApproval:
        kwargs: dict[str, Any] = {
            "principal": principal,
            "session_id": session_id,
            "asked_by": asked_by,
            "ttl": ttl,
        }
        try:
            return await self.primary.create(request, **kwargs)
        except StoreError as exc:
            logger.warning("%s; the question is kept on this replica", exc)
            item = await self._local.create(request, **kwargs)
            self._here.add(item.id)
            return item

    def _of(self, id: str) -> PendingApprovalStore:
        return self._local if id in self._here else self.primary

    async def get(self, id: str) -> PendingApproval | None:
        return await self._of(id).get(id)

    async def list(
        self, *, principal: str | None = None, include_closed: bool = False
    ) -> list[PendingApproval]:
        local = await self._local.list(principal=principal, include_closed=include_closed)
        try:
            shared = await self.primary.list(principal=principal, include_closed=include_closed)
        except StoreError:
            shared = []
        return sorted([*shared, *local], key=lambda i: i.created_at)

    async def decide(
        self, id: str, decision: Decision, *, decided_by: str, reason: str = ""
    ) -> PendingApproval:
        return await self._of(id).decide(id, decision, decided_by=decided_by, reason=reason)

    async def wait(self, id: str) -> PendingApproval:
        return await self._of(id).wait(id)

    async def use(self, id: str) -> bool:
        """Spend question ``id``'s approval: a question kept here is known to no other
        replica; one of the store raises while it is lost (it could be spent elsewhere)."""
        return await self._of(id).use(id)

    async def counts(self) -> dict[str, int]:
        counted = await self._local.counts()
        try:
            shared = await self.primary.counts()
        except StoreError:
            shared = {}
        return {k: counted.get(k, 0) + shared.get(k, 0) for k in {*counted, *shared}}

    def close(self) -> None:
        if callable(close := getattr(self.primary, "close", None)):
            close()


class FallbackRateLimiter:
    """``primary`` (the team store's shared buckets), falling back to buckets in this process's
    memory while it raises :class:`~pegboard.errors.StoreError` (see the module docstring)."""

    def __init__(self, primary: RateLimiter) -> None:
        self.primary = primary
        self._local = MemoryRateLimiter()
        self._lost = False

    async def take(self, key: str, limit: Limit) -> float | None:
        try:
            wait = await self.primary.take(key, limit)
        except StoreError as exc:
            if not self._lost:
                self._lost = True
                logger.warning("%s; rate limits are counted on this replica until it is back", exc)
            return await self._local.take(key, limit)
        if self._lost:
            self._lost = False
            logger.info("the team store is back: rate limits are shared by the replicas again")
        return wait

    def close(self) -> None:
        if callable(close := getattr(self.primary, "close", None)):
            close()

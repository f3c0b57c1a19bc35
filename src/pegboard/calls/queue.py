"""The approvals queue: a gated call nobody can be asked about in-band waits for a person.

A client that cannot be asked (no elicitation) gets :class:`ApprovalQueue` as its approval
handler. A gated call then becomes a question in the pending-approval store (the one every
route shares: the admin page, ``pegboard approvals`` and ``pegboard ui`` read it), and the
tool result tells the model that it waits for a person and that the same call may be retried
once approved (:class:`ApprovalQueued`). A person approves once, approves for a while, or
denies with a reason. The identical call (same principal, session, tool definition and
arguments) retried before the question expires then runs (once: the approval is used up; for a
while: a session grant covers the retries until it lapses), or is refused with the reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pegboard.calls.approval import ApprovalOutcome
from pegboard.calls.grants import Grant, GrantKey, GrantStore
from pegboard.calls.pending import PendingApproval, PendingApprovalStore
from pegboard.calls.request import ApprovalRequest, Decision
from pegboard.errors import ApprovalDenied, ApprovalRequired

QUEUE_TTL = 10 * 60.0  # seconds a queued question (and an approval of it) stays good
A_WHILE = 30 * 60.0  # how long "approve for a while" covers the identical call
WHERE = "the pegboard admin page (/admin/approvals, or `pegboard ui`) or `pegboard approvals`"


class ApprovalQueued(ApprovalRequired):
    """The call waits in the approvals queue for a person (nothing ran); the message says
    where, and that the identical call can be retried once approved."""

    def __init__(self, message: str, *, tool_name: str, approval_id: str) -> None:
        super().__init__(message, tool_name=tool_name)
        self.approval_id = approval_id


@dataclass
class ApprovalQueue:
    """The approval handler of a client that cannot be asked (see the module docstring).

    ``ttl`` is how long a question waits. An approval covers one call: the store marks it
    used (:meth:`~pegboard.calls.pending.PendingApprovalStore.use`), so neither a restart nor
    another replica runs the call a second time."""

    ttl: float = QUEUE_TTL
    a_while: float = A_WHILE
    name: str = "approvals queue"

    async def request_approval(self, request: ApprovalRequest) -> Decision:
        # authorise() never asks a queue in-band (it calls settle); reaching here is a bug.
        raise ApprovalRequired(
            f"Tool {request.tool_name} needs approval through the queue",
            tool_name=request.tool_name,
        )

    async def settle(
        self,
        request: ApprovalRequest,
        key: GrantKey,
        *,
        pending: PendingApprovalStore,
        grants: GrantStore | None,
        session_id: str | None,
        asked_by: str,
    ) -> ApprovalOutcome:
        """The outcome of the identical call's latest question, or raise: still waiting or a
        new question (:class:`ApprovalQueued`), denied (:class:`ApprovalDenied`)."""
        now = time.time()
        for item in reversed(await pending.list(principal=key.principal, include_closed=True)):
            if item.session_id != session_id or item.request.key != request.key:
                continue
            status = item.status(now)
            if status == "pending":
                raise self._queued(item)
            if item.decision == "deny" and now < item.expires_at:
                because = f" (reason: {item.reason})" if item.reason else ""
                raise ApprovalDenied(
                    f"{item.decided_by or 'A person'} denied the call to {request.tool_name}"
                    f"{because}; it was not run. Do not retry it unchanged: take another "
                    "approach or ask the user.",
                    tool_name=request.tool_name,
                )
            approved = item.decision in ("allow_once", "allow_session", "allow_always")
            if approved and now < item.expires_at and await pending.use(item.id):
                if item.decision != "allow_once" and grants is not None:
                    until = (item.decided_at or now) + self.a_while
                    who = item.decided_by or self.name
                    await grants.add(
                        Grant(key, "session", session_id, granted_by=who, expires_at=until)
                    )
                return "allow_once" if item.decision == "allow_once" else "allow_session"
            break  # used up, or expired: ask again
        item = await pending.create(
            request, principal=key.principal, session_id=session_id, asked_by=asked_by, ttl=self.ttl
        )
        raise self._queued(item)

    def _queued(self, item: PendingApproval) -> ApprovalQueued:
        minutes = max(1, round((item.expires_at - time.time()) / 60))
        name = item.request.tool_name
        return ApprovalQueued(
            f"Tool {name} needs a person's approval, and this MCP client cannot ask for it, so "
            f"the call waits in pegboard's approvals queue (request {item.id[:8]}) and did not "
            f"run. A person can approve or deny it at {WHERE}. Once it is approved, retry "
            f"exactly the same call (same tool and arguments) within {minutes} min; retrying "
            "before then only says it still waits.",
            tool_name=name,
            approval_id=item.id,
        )

"""A call session (who approves, what was approved, where records go) and one call in flight."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pegboard.calls.approval import ApprovalHandler, ApprovalOutcome
from pegboard.calls.audit import AuditSink
from pegboard.calls.grants import GrantStore, MemoryGrantStore
from pegboard.calls.limits import CallLimits
from pegboard.calls.pending import MemoryPendingStore, PendingApprovalStore
from pegboard.core.access import AccessView
from pegboard.core.entry import ToolEntry
from pegboard.core.principal import ANONYMOUS, Principal
from pegboard.core.tool import ToolContext


@dataclass(slots=True)
class CallSession:
    """What every call of one conversation (or one MCP client connection) shares.

    ``approval_handler`` asks a human about gated calls (None: gated calls are refused with
    :class:`~pegboard.errors.ApprovalRequired`); ``grants`` keeps the yeses given for the
    session or always, ``pending`` the questions asked and their answers (both shared by
    every session of a runtime: grants are scoped by principal and session id);
    ``audit`` receives one :class:`~pegboard.calls.audit.CallRecord` per call.
    ``access`` is what ``principal`` may use (``[[auth.allow]]``; None: everything): tools
    outside it are absent from its listings and unknown when named, on every route, inner
    calls of meta-tools included; ``limits`` are the rate limits every call of the
    principal takes from (``[limits]``; None: off).
    """

    approval_handler: ApprovalHandler | None = None
    grants: GrantStore = field(default_factory=MemoryGrantStore)
    audit: AuditSink | None = None
    session_id: str | None = field(default_factory=lambda: uuid.uuid4().hex)
    pending: PendingApprovalStore = field(default_factory=MemoryPendingStore)
    principal: Principal = ANONYMOUS
    client: str | None = None  # the MCP client (its clientInfo name), for the records
    # "For this session" grants lapse after this many seconds (None: with the session): a
    # sessionless (2026-07-28) client's session is its principal and name, so "a while".
    grant_ttl: float | None = None
    # Approval policies evaluated ahead of a call (a framework asked whether to pause), by
    # call id: the call itself uses the answer, so a policy runs once per call.
    gates: dict[str, bool] = field(default_factory=dict)
    access: AccessView | None = None
    limits: CallLimits | None = None

    def for_call(
        self,
        *,
        approval_handler: ApprovalHandler | None,
        session_id: str | None,
        client: str | None,
        principal: Principal,
        grant_ttl: float | None,
        access: AccessView | None,
    ) -> CallSession:
        """This session as one call runs in it, with the call's own handler, connection,
        client, principal, grant lifetime and access; everything else shared (the same
        grants, pending store, audit sink, gates and limits). What ``dataclasses.replace``
        gives, without its walk over the fields (~1% of a proxied call)."""
        return CallSession(
            approval_handler=approval_handler,
            grants=self.grants,
            audit=self.audit,
            session_id=session_id,
            pending=self.pending,
            principal=principal,
            client=client,
            grant_ttl=grant_ttl,
            gates=self.gates,
            access=access,
            limits=self.limits,
        )


@dataclass(slots=True)
class Call:
    """One call on its way through a toolset; the steps note what they decided on it.

    ``via`` names the route (``direct`` for the library dispatcher, ``gateway``, ``cli``,
    ``tool_invoke``); ``interactive=False`` never asks the approval handler.
    """

    name: str
    arguments: Mapping[str, Any]
    ctx: ToolContext
    via: str
    session: CallSession
    interactive: bool = True
    approval: ApprovalOutcome = "not_required"
    unparsable: str | None = None  # why the arguments could not be read: refused, audited
    # The entry and the arguments the approval step checked against its schema: running
    # that entry with those very arguments does not check them again (run_entry).
    checked: tuple[ToolEntry, Mapping[str, Any]] | None = None

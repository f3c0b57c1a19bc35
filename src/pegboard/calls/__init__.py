"""The one call path: authorise (approval), validate, execute, audit.

Every route that runs a tool (the agent dispatcher, the gateway, the CLI) goes through a
toolset (:mod:`pegboard.toolsets`) built from these steps; a meta-tool's inner call goes
through :func:`execute_entry`, which composes the same steps.
"""

from typing import TYPE_CHECKING

from pegboard._lazy import lazy_exports

# public name -> submodule, loaded on first use (PEP 562): importing one submodule does not
# import its siblings.
_EXPORTS = {
    "ApprovalHandler": "approval",
    "ApprovalOutcome": "approval",
    "ApprovalRequest": "approval",
    "AuditSink": "audit",
    "Call": "session",
    "CallRecord": "audit",
    "CallSession": "session",
    "CallbackApprovalHandler": "approval",
    "Decision": "approval",
    "Grant": "grants",
    "GrantKey": "grants",
    "GrantScope": "grants",
    "GrantStore": "grants",
    "MemoryGrantStore": "grants",
    "MemoryPendingStore": "pending",
    "PendingApproval": "pending",
    "PendingApprovalStore": "pending",
    "SqliteGrantStore": "grants_sqlite",
    "SqlitePendingStore": "pending_sqlite",
    "audited": "audit",
    "authorise": "approval",
    "authorise_call": "execute",
    "emit_record": "audit",
    "error_output": "execute",
    "execute_entry": "execute",
    "is_approval_gated": "approval",
    "run_entry": "execute",
}

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from pegboard.calls.approval import (
        ApprovalHandler,
        ApprovalOutcome,
        ApprovalRequest,
        CallbackApprovalHandler,
        Decision,
        authorise,
        is_approval_gated,
    )
    from pegboard.calls.audit import AuditSink, CallRecord, audited, emit_record
    from pegboard.calls.execute import authorise_call, error_output, execute_entry, run_entry
    from pegboard.calls.grants import Grant, GrantKey, GrantScope, GrantStore, MemoryGrantStore
    from pegboard.calls.grants_sqlite import SqliteGrantStore
    from pegboard.calls.pending import MemoryPendingStore, PendingApproval, PendingApprovalStore
    from pegboard.calls.pending_sqlite import SqlitePendingStore
    from pegboard.calls.session import Call, CallSession

__all__ = [
    "ApprovalHandler",
    "ApprovalOutcome",
    "ApprovalRequest",
    "AuditSink",
    "Call",
    "CallRecord",
    "CallSession",
    "CallbackApprovalHandler",
    "Decision",
    "Grant",
    "GrantKey",
    "GrantScope",
    "GrantStore",
    "MemoryGrantStore",
    "MemoryPendingStore",
    "PendingApproval",
    "PendingApprovalStore",
    "SqliteGrantStore",
    "SqlitePendingStore",
    "audited",
    "authorise",
    "authorise_call",
    "emit_record",
    "error_output",
    "execute_entry",
    "is_approval_gated",
    "run_entry",
]

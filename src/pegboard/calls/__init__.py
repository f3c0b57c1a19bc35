"""The one call path: authorise (approval), validate, execute, audit.

Every route that runs a tool (the agent dispatcher, the gateway, the CLI) goes through a
toolset (:mod:`pegboard.toolsets`) built from these steps; a meta-tool's inner call goes
through :func:`execute_entry`, which composes the same steps.
"""

from pegboard.calls.approval import (
    ApprovalGrants,
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
from pegboard.calls.session import Call, CallSession

__all__ = [
    "ApprovalGrants",
    "ApprovalHandler",
    "ApprovalOutcome",
    "ApprovalRequest",
    "AuditSink",
    "Call",
    "CallRecord",
    "CallSession",
    "CallbackApprovalHandler",
    "Decision",
    "audited",
    "authorise",
    "authorise_call",
    "emit_record",
    "error_output",
    "execute_entry",
    "is_approval_gated",
    "run_entry",
]

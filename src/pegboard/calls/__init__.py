"""The one call path: authorise (approval), validate, execute, audit.

Every route that runs a tool (the agent dispatcher, ``tool_invoke``, the gateway, the CLI)
goes through :func:`execute_entry`, which authorises through :func:`authorise`.
"""

from pegboard.calls.approval import (
    ApprovalGrants,
    ApprovalHandler,
    ApprovalRequest,
    CallbackApprovalHandler,
    Decision,
    authorise,
    is_approval_gated,
)
from pegboard.calls.execute import AuditSink, CallPolicy, CallRecord, error_output, execute_entry

__all__ = [
    "ApprovalGrants",
    "ApprovalHandler",
    "ApprovalRequest",
    "AuditSink",
    "CallPolicy",
    "CallRecord",
    "CallbackApprovalHandler",
    "Decision",
    "authorise",
    "error_output",
    "execute_entry",
    "is_approval_gated",
]

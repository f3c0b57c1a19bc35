"""A call session (who approves, what was approved, where records go) and one call in flight."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pegboard.calls.approval import ApprovalGrants, ApprovalHandler, ApprovalOutcome
from pegboard.calls.audit import AuditSink
from pegboard.core.tool import ToolContext


@dataclass(slots=True)
class CallSession:
    """What every call of one conversation (or one MCP client connection) shares.

    ``approval_handler`` asks a human about gated calls (None: gated calls are refused with
    :class:`~pegboard.errors.ApprovalRequired`); ``grants`` remembers "allow for this
    session"; ``audit`` receives one :class:`~pegboard.calls.audit.CallRecord` per call.
    """

    approval_handler: ApprovalHandler | None = None
    grants: ApprovalGrants = field(default_factory=ApprovalGrants)
    audit: AuditSink | None = None
    session_id: str | None = None


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

"""Approval through MCP elicitation: the connected client asks its user.

A client that did not declare the ``elicitation`` capability cannot be asked; the gateway then
refuses gated calls with :data:`NO_ELICITATION_MESSAGE` instead of running them.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

import mcp_types
from mcp.server.connection import Connection
from mcp.server.session import ServerSession

from pegboard.calls.approval import ApprovalGrants, ApprovalRequest, Decision
from pegboard.core.redact import shown
from pegboard.core.scope import GateReason

NO_ELICITATION_MESSAGE = (
    "Tool {name} requires the user's approval, and this MCP client cannot ask for it (it does "
    "not support elicitation), so pegboard refused the call without running it. Use a client "
    "with elicitation support, or {fix}."
)
REFUSAL_FIX: dict[GateReason, str] = {
    "force_prompt": "remove the tool from force_prompt_tools in pegboard's config",
    "destructive": (
        'let destructive tools run unasked with destructive_tools = "allow" in the '
        "profile ([profiles.<name>]) of pegboard's config (it asks because its server "
        "annotates it destructiveHint)"
    ),
}


def decision_schema(allow_always_label: str) -> mcp_types.ElicitRequestedSchema:
    """The approval form: allow once, allow always (``allow_always_label`` says for how long
    on this route), or deny."""
    return {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": ["allow_once", "allow_always", "deny"],
                "enumNames": ["Allow once", allow_always_label, "Deny"],
                "default": "deny",
            }
        },
        "required": ["decision"],
    }


_SCHEMA = decision_schema("Allow for this session")


def connection_of(session: ServerSession) -> Connection:
    # ServerRequestContext does not expose the connection yet (SDK TODO L54); the session
    # holds it, and list_changed must go on the connection's standalone channel.
    connection: Connection = session._connection
    return connection


def connection_grants(session: ServerSession) -> tuple[ApprovalGrants, str]:
    """The approval grants and audit session id of ``session``'s client connection.

    "Allow for this session" means this client connection, not every client; likewise one
    audit session per connection."""
    state = connection_of(session).state
    grants: ApprovalGrants = state.setdefault("pegboard.grants", ApprovalGrants())
    session_id: str = state.setdefault("pegboard.session_id", uuid.uuid4().hex)
    return grants, session_id


def client_can_elicit(session: ServerSession) -> bool:
    caps = session.client_capabilities
    return caps is not None and caps.elicitation is not None


def approval_message(request: ApprovalRequest) -> str:
    """What the client's user reads (escaped by :func:`~pegboard.core.redact.shown`)."""
    args = json.dumps(dict(request.arguments), ensure_ascii=False, indent=2, sort_keys=True)
    return shown(
        f"Allow the tool {request.tool_name} ({request.namespace_label}) to run?\n"
        f"{request.description}\n\nArguments:\n{args}"
    )


@dataclass(frozen=True, slots=True)
class ElicitationApproval:
    """An :class:`~pegboard.calls.approval.ApprovalHandler` that asks over the MCP connection."""

    session: ServerSession
    related_request_id: mcp_types.RequestId | None = None

    async def request_approval(self, request: ApprovalRequest) -> Decision:
        result = await self.session.elicit_form(
            approval_message(request), _SCHEMA, related_request_id=self.related_request_id
        )
        if result.action != "accept" or not result.content:
            return "deny"
        decision = result.content.get("decision")
        if decision in ("allow_once", "allow_always"):
            return "allow_once" if decision == "allow_once" else "allow_always"
        return "deny"

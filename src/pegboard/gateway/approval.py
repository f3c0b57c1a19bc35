"""Approval through MCP elicitation: the connected client asks its user.

A client that did not declare the ``elicitation`` capability cannot be asked; the gateway then
refuses gated calls with :data:`NO_ELICITATION_MESSAGE` instead of running them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import mcp_types
from mcp.server.connection import Connection
from mcp.server.session import ServerSession

from pegboard.calls.pending import PendingApproval
from pegboard.calls.request import ApprovalRequest, Decision
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


def decision_schema(session_label: str) -> mcp_types.ElicitRequestedSchema:
    """The approval form: allow once, allow for the session (``session_label`` says how long
    that is on this route), or deny."""
    return {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": ["allow_once", "allow_session", "deny"],
                "enumNames": ["Allow once", session_label, "Deny"],
                "default": "deny",
            }
        },
        "required": ["decision"],
    }


_SCHEMA = decision_schema("Allow for this session")


def form_decision(content: object) -> Decision:
    """The decision a filled-in approval form says (anything else: deny). "allow_always"
    is what the form offered for "for this session" before."""
    decision = content.get("decision") if isinstance(content, dict) else None
    if decision == "allow_once":
        return "allow_once"
    if decision in ("allow_session", "allow_always"):
        return "allow_session"
    return "deny"


def connection_of(session: ServerSession) -> Connection:
    # ServerRequestContext does not expose the connection yet (SDK TODO L54); the session
    # holds it, and list_changed must go on the connection's standalone channel.
    connection: Connection = session._connection
    return connection


def connection_session_id(session: ServerSession) -> str:
    """The session id of ``session``'s client connection: what "allow for this session"
    grants are scoped to (this client connection, not every client), and the audit session."""
    state = connection_of(session).state
    session_id: str | None = state.get("pegboard.session_id")
    if session_id is None:  # the first call of this connection (no random id per call)
        session_id = state["pegboard.session_id"] = uuid.uuid4().hex
    return session_id


def client_name(session: ServerSession) -> str | None:
    """The connected client's name as it introduced itself (``clientInfo.name``), if it did."""
    params = session.client_params
    return params.client_info.name if params is not None and params.client_info else None


def client_can_elicit(session: ServerSession) -> bool:
    caps = session.client_capabilities
    return caps is not None and caps.elicitation is not None


def elicitation_modes(session: ServerSession) -> tuple[bool, bool]:
    """Whether the client can be asked by a form, and by a URL (an empty ``elicitation``
    capability means form only, as the specification says)."""
    caps = session.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    if elicitation is None:
        return False, False
    if elicitation.form is None and elicitation.url is None:
        return True, False
    return elicitation.form is not None, elicitation.url is not None


def approval_message(request: ApprovalRequest) -> str:
    """What the client's user reads (escaped by :func:`~pegboard.core.redact.shown`)."""
    args = json.dumps(dict(request.arguments), ensure_ascii=False, indent=2, sort_keys=True)
    return shown(
        f"Allow the tool {request.tool_name} ({request.namespace_label}) to run?\n"
        f"{request.description}\n\nArguments:\n{args}"
    )


def page_message(request: ApprovalRequest, approval_id: str) -> str:
    """What a URL-mode elicitation to the approval page says."""
    return shown(
        f"Approve or deny the call to {request.tool_name} ({request.namespace_label}) on "
        f"pegboard's approval page (request {approval_id[:8]}); the call runs once approved."
    )


@dataclass(frozen=True, slots=True)
class ElicitationApproval:
    """An :class:`~pegboard.calls.approval.ApprovalHandler` that asks over the MCP connection.

    With ``page`` (the admin page of a pending approval, by id; the client declared URL-mode
    elicitation) the question's page is offered beside the form, as a URL-mode elicitation
    whose ``elicitationId`` is the question's id: the form's answer decides, or, once the
    user accepted to open the page, the person's decision there (``authorise`` waits on the
    question meanwhile). ``opened`` lists the pages sent, so the gateway tells the client
    when they are done (``notifications/elicitation/complete``)."""

    session: ServerSession
    related_request_id: mcp_types.RequestId | None = None
    name: str = "elicitation"
    page: Callable[[str], str | None] | None = None
    form: bool = True
    opened: list[str] = field(default_factory=list)

    async def request_approval(self, request: ApprovalRequest) -> Decision:
        return await self._form(request) or "deny"

    async def _form(self, request: ApprovalRequest) -> Decision | None:
        """The form's decision (None: dismissed, ``cancel``)."""
        result = await self.session.elicit_form(
            approval_message(request), _SCHEMA, related_request_id=self.related_request_id
        )
        if result.action == "cancel":
            return None
        if result.action != "accept" or not result.content:
            return "deny"
        return form_decision(result.content)

    async def request_approval_of(
        self, request: ApprovalRequest, question: PendingApproval
    ) -> Decision:
        """The form's decision; or, once the user accepted to open the question's page, none
        here (the person's there ends this wait); dismissed everywhere: deny."""
        url = self.page(question.id) if self.page is not None else None
        if url is None:
            return await self.request_approval(request)
        decided: list[Decision] = []
        opened: list[bool] = []

        async def by_form() -> None:
            answer = await self._form(request)
            if answer is not None:
                decided.append(answer)
                tg.cancel_scope.cancel()

        async def by_page() -> None:
            self.opened.append(question.id)
            message = page_message(request, question.id)
            result = await self.session.elicit_url(
                message, url, question.id, related_request_id=self.related_request_id
            )
            opened.append(result.action == "accept")

        async with anyio.create_task_group() as tg:
            if self.form:
                tg.start_soon(by_form)
            tg.start_soon(by_page)
        if decided:
            return decided[0]
        if not any(opened):
            return "deny"
        await anyio.sleep_forever()  # the page decides: authorise() stops this wait
        raise AssertionError("unreachable")  # pragma: no cover

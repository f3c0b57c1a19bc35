"""Approval and audit of resource reads and prompt gets, on the tools' call path.

A read or get is authorised by :func:`~pegboard.calls.approval.authorise` (as a call of a
synthetic entry named like what the client sees: ``pegboard://S/U`` or ``mcp__S__P``) and
leaves exactly one :class:`~pegboard.calls.audit.CallRecord` through
:func:`~pegboard.calls.audit.audited`, refusals included. A server gates its content with
``approve_content = true`` in its config; the client is asked by elicitation like for tools.

A yes, and "allow for this session", is bound to the listed definition of the prompt or
resource (its description, arguments, metadata: :func:`definition_digest`), as a tool's is to
its definition hash, so a server that redefines it is asked about again. The definition is
taken once per request; in input-required rounds (2026-07-28), once at the first round, sealed
in the round's state, and the retry is decided on it: a listing that arrives between the rounds
(the content was not listed yet) does not ask again, a definition that changed between them
does (the user was asked about the old one).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import mcp_types
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from pegboard.calls.approval import ApprovalHandler, ApprovalPending, ApprovalRequest
from pegboard.calls.audit import audited
from pegboard.calls.execute import settle_approval
from pegboard.calls.request import arguments_fingerprint
from pegboard.calls.session import Call, CallSession
from pegboard.core.entry import ToolEntry
from pegboard.core.principal import Principal
from pegboard.core.tool import Tool, ToolContext, canonical_json
from pegboard.errors import ApprovalRequired, ToolError
from pegboard.gateway.approval import (
    ElicitationApproval,
    client_can_elicit,
    connection_session_id,
)
from pegboard.gateway.rounds import RoundApproval

VIA = "gateway"
T = TypeVar("T")

NO_ELICITATION_CONTENT = (
    "{name} of MCP server {server} requires the user's approval, and this MCP client cannot "
    "ask for it (it does not support elicitation), so pegboard refused it. Use a client with "
    "elicitation support, or set approve_content = false for the server in pegboard's config."
)


@dataclass(frozen=True, slots=True)
class Asking:
    """How a 2026-07-28 client is asked (it has no session to push an elicitation on): the
    handler of this request's round (None: the client cannot be asked), its principal, the
    session id of its principal and client (what "for a while" grants are scoped to) and how
    long they last, and ``ask``, which makes the round's result."""

    handler: ApprovalHandler | None
    principal: Principal
    session_id: str
    grant_ttl: float
    # the round's result: (what is asked, the definition sealed beside it, the pending
    # question it asks, which the retry's answer then decides)
    ask: Callable[[ApprovalRequest, str | None, str | None], mcp_types.InputRequiredResult]

    def taken(self, shown: str, arguments: Mapping[str, Any]) -> str | None:
        """The definition digest sealed at the first round of this retry, if the retry
        answers about ``shown`` with these arguments (None: a first call, or another)."""
        answer = self.handler.answer if isinstance(self.handler, RoundApproval) else None
        if answer is None or answer.key[0] != shown:
            return None
        if answer.key[2] != arguments_fingerprint(dict(arguments)):
            return None
        return answer.bound


UNLISTED = "unlisted"  # the digest of content not listed yet (a get never waits for a listing)


def definition_digest(definition: BaseModel | None) -> str:
    """What a content grant is bound to: the listed prompt or resource (:data:`UNLISTED`)."""
    if definition is None:
        return UNLISTED
    dumped = definition.model_dump(mode="json", by_alias=True, exclude_none=True)
    return hashlib.sha256(canonical_json(dumped).encode("utf-8")).hexdigest()


class ContentGuard:
    """Authorises and audits one read or get of an upstream's content."""

    def __init__(self, gated: Callable[[str], bool], session: CallSession) -> None:
        self._gated = gated  # server id -> whether its content asks for approval
        self._session = session  # the runtime's: audit sink and approval stores

    async def run(
        self,
        shown: str,
        server_id: str | None,
        arguments: Mapping[str, Any],
        session: ServerSession | None,
        request_id: mcp_types.RequestId | None,
        body: Callable[[], Awaitable[T]],
        asking: Asking | None = None,
        definition: BaseModel | None = None,
        *,
        principal: Principal | None = None,
    ) -> T | mcp_types.InputRequiredResult:
        """Run ``body`` (the upstream read/get) if allowed; refusals become an ``MCPError``.

        ``server_id`` None: no allowed server owns ``shown`` (``body`` says so, ungated).
        ``asking``: a modern client's round, whose result is returned when the user must be
        asked first. ``definition``: the listed prompt or resource, as this request read it
        (None: not listed yet); the approval is bound to it (see the module docstring)."""
        digest = definition_digest(definition)
        taken = asking.taken(shown, arguments) if asking is not None else None
        if taken == UNLISTED:  # listed between the rounds: decided on what was asked
            digest = taken
        what = "Reading resource" if shown.startswith("pegboard://") else "Getting prompt"
        entry = ToolEntry(
            name=shown,
            namespace=f"mcp:{server_id or ''}",
            tool=Tool(
                description=f"{what} {shown} of MCP server {server_id}",
                needs_approval=server_id is not None and self._gated(server_id),
                # enters the entry's definition hash: a grant covers this definition only
                annotations={"pegboard/definition": digest},
            ),
        )
        can_ask = session is not None and client_can_elicit(session)
        handler = ElicitationApproval(session, request_id) if session and can_ask else None
        session_id = connection_session_id(session) if session else None
        call_session = replace(
            self._session,
            approval_handler=handler,
            session_id=session_id,
            principal=principal or self._session.principal,
        )
        if asking is not None:
            call_session = replace(
                self._session,
                approval_handler=asking.handler,
                session_id=asking.session_id,
                principal=asking.principal,
                grant_ttl=asking.grant_ttl,
            )
        ctx = ToolContext(call_id=f"mcp-{request_id}", session_id=call_session.session_id)
        call = Call(shown, dict(arguments), ctx, VIA, call_session)

        async def authorised() -> T:
            await settle_approval(call, entry)
            return await body()

        try:
            return await audited(call, authorised)
        except ApprovalPending as pending:
            assert asking is not None  # only a round's handler asks for another round
            return asking.ask(pending.request, digest, pending.approval_id)
        except ApprovalRequired as exc:
            message = NO_ELICITATION_CONTENT.format(name=shown, server=server_id)
            raise MCPError(code=mcp_types.INVALID_REQUEST, message=message) from exc
        except ToolError as exc:  # a refusal: the user's no, or an approval that failed
            raise MCPError(code=mcp_types.INVALID_REQUEST, message=str(exc)) from exc

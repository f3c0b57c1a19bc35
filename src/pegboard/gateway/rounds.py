"""Approval as input-required rounds, for clients of the 2026-07-28 protocol era.

A modern client keeps no session the gateway could push an elicitation request on. A gated
call is answered instead with an ``InputRequiredResult``: a form elicitation (the question a
handshake-era client is pushed) and a ``requestState``. The client asks its user and calls
again with the answer and the state; the SDK's client drives these rounds with the same
elicitation callback as a pushed elicitation.

The state is sealed by the SDK's :class:`~mcp.server.request_state.RequestStateBoundary`
(AES-256-GCM under a key kept in the store, see :func:`state_boundary`, so any replica on the
same store verifies a state another issued). Its claims bind it to ``tools/call`` (or the
read/get), the called tool name, the arguments' digest, the principal
(:func:`~pegboard.gateway.identity.principal_of`; the OAuth identity under ``[auth]``), the audience
``pegboard`` and an expiry (:data:`STATE_TTL_S`); a state that fails any of them, or was
altered by one byte, is refused before anything runs. Inside, pegboard's own part names the
tool that is really asked about (``tool_invoke``'s target), its *definition hash* and the
fingerprint of its arguments, and a one-time nonce: the retry is honoured only for that exact
call of that exact definition, and only once (the nonce is spent in the store, so a recorded
state and answer cannot run the call twice, on this replica or another).

When the admin UI is known (:class:`~pegboard.gateway.pages.ApprovalPages`)
and the client declared URL-mode elicitation, the round also carries a URL-mode elicitation
to the question's own page (``/admin/approvals/<id>``): the pending question the round asks
(created by :func:`~pegboard.calls.approval.authorise`) is sealed in the state, so a person
can decide it there instead of in the form. A retry whose form says nothing (dismissed, or a
client that only opens URLs) but whose user accepted to open the page waits up to
:data:`PAGE_WAIT_S` for that decision, then answers with a state-only round (the SDK's client
retries it at once), until the question is decided or expires. Either way the retry's answer
decides the sealed question, so no record stays pending after its call was answered.

"Allow for this session" has no session to live in: on this era the session is the
principal and the client's declared name (:func:`sessionless_id`), and its grants lapse after
:data:`GRANT_TTL_S` seconds (30 minutes). They are grants of the runtime's one
:class:`~pegboard.calls.grants.GrantStore`, bound like every grant to the principal, the
tool's definition hash and the exact arguments.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import mcp_types
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError

from pegboard.calls.approval import ApprovalPending
from pegboard.calls.request import ApprovalRequest, Decision, arguments_fingerprint
from pegboard.core.principal import Principal
from pegboard.gateway.approval import (
    approval_message,
    decision_schema,
    form_decision,
    page_message,
)
from pegboard.gateway.identity import principal_of

logger = logging.getLogger("pegboard.gateway")

AUDIENCE = "pegboard"
KEY_NAME = "gateway.request-state"
STATE_TTL_S = 600.0
GRANT_TTL_S = 30 * 60.0
INPUT_KEY = "pegboard.approval"
PAGE_KEY = "pegboard.approval.page"
PAGE_WAIT_S = 60.0  # how long one retry waits for the page's decision before another round
_STATE_VERSION = 1
_FOR_A_WHILE = f"Allow for {int(GRANT_TTL_S // 60)} minutes (this client)"


class SecretStore(Protocol):
    """What rounds need of the store (the catalog stores have it)."""

    def secret(self, name: str) -> bytes: ...

    def spend(self, token: str, expires_at: float) -> bool: ...


def store_lost(store: SecretStore) -> bool:
    """True while ``store`` is a team store whose database is lost: a round's answer could
    not be checked to be used once (:mod:`pegboard.calls.fallback`)."""
    return bool(getattr(getattr(store, "db", None), "lost", False))


def client_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """The client's declared name (``clientInfo.name`` of the request's envelope), or ``-``."""
    params = ctx.session.client_params
    return params.client_info.name if params is not None else "-"


def state_boundary(store: SecretStore, ttl: float = STATE_TTL_S) -> RequestStateBoundary:
    """The SDK middleware that seals and verifies ``requestState``, keyed from ``store``."""
    security = RequestStateSecurity(
        keys=[store.secret(KEY_NAME)], ttl=ttl, bind_principal=_bound_principal
    )
    return RequestStateBoundary(security, default_audience=AUDIENCE)


def _bound_principal(ctx: ServerRequestContext[Any, Any]) -> str:
    return principal_of(ctx).subject


def refused(reason: str) -> MCPError:
    """The same wire error the SDK's boundary gives; the reason goes to the log only."""
    logger.warning("requestState refused: %s", reason)
    return MCPError(
        code=mcp_types.INVALID_PARAMS,
        message="Invalid or expired requestState",
        data={"reason": "invalid_request_state"},
    )


@dataclass(frozen=True, slots=True)
class Answer:
    """The user's answer carried by a verified retry, for the call its state names;
    ``decision`` None: the person decides at the approval page (``question``'s, sealed at
    the first round); ``bound``: what the asker sealed beside it (a content definition)."""

    key: tuple[str, str, str]
    decision: Decision | None
    bound: str | None = None
    question: str | None = None


@dataclass
class Rounds:
    """Issues approval rounds and reads their answers (see the module docstring)."""

    store: SecretStore
    ttl: float = STATE_TTL_S  # how long a round's state is good for

    def ask(
        self,
        request: ApprovalRequest,
        bound: str | None = None,
        *,
        approval_id: str | None = None,
        page: str | None = None,
        form: bool = True,
        waiting: bool = False,
    ) -> mcp_types.InputRequiredResult:
        """The round asking the user about ``request`` (its state is sealed on the way out):
        the form (``form``) and, with ``page`` (the URL of question ``approval_id``'s page), a
        URL-mode elicitation to it; ``waiting``: a round that asks nothing new (the page has
        not decided yet), its state only. ``bound`` is sealed beside it and comes back in the
        retry's :class:`Answer`."""
        state: dict[str, Any] = {
            "v": _STATE_VERSION,
            "tool": request.tool_name,
            "def": request.definition_hash,
            "args": arguments_fingerprint(request.arguments),
            "nonce": secrets.token_urlsafe(16),
        }
        if bound is not None:
            state["bound"] = bound
        if approval_id is not None:
            state["q"] = approval_id
        if waiting and approval_id is not None:
            state["w"] = 1
            return mcp_types.InputRequiredResult(
                request_state=json.dumps(state, separators=(",", ":"))
            )
        asked: dict[str, mcp_types.InputRequest] = {}
        if form or page is None:
            asked[INPUT_KEY] = mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message=approval_message(request),
                    requested_schema=decision_schema(_FOR_A_WHILE),
                )
            )
        if page is not None and approval_id is not None:
            asked[PAGE_KEY] = mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestURLParams(
                    message=page_message(request, approval_id), url=page
                )
            )
        return mcp_types.InputRequiredResult(
            input_requests=asked,
            request_state=json.dumps(state, separators=(",", ":")),
        )

    def answer(self, params: mcp_types.InputResponseRequestParams) -> Answer | None:
        """The answer of a retry (None on a first call). The state arrives verified and
        unsealed by the boundary; its nonce is spent here, so a second use is refused."""
        if params.request_state is None:
            return None
        try:
            state = json.loads(params.request_state)
            key = (str(state["tool"]), str(state["def"]), str(state["args"]))
            nonce = str(state["nonce"])
            bound = state.get("bound")
            question = state.get("q")
            waiting = bool(state.get("w"))
        except (ValueError, KeyError, TypeError, AttributeError):
            raise refused("pegboard state unreadable") from None
        if not isinstance(state, dict) or state.get("v") != _STATE_VERSION:
            raise refused("pegboard state version")
        if not self.store.spend(f"approval:{nonce}", time.time() + self.ttl + 60):
            raise refused(f"replayed approval of {key[0]}")
        responses = params.input_responses or {}
        decision = _decision(responses.get(INPUT_KEY), responses.get(PAGE_KEY), waiting)
        if question is None and decision is None:
            decision = "deny"  # no question to wait on (not ours): nothing approved it
        return Answer(
            key,
            decision,
            None if bound is None else str(bound),
            None if question is None else str(question),
        )


def _decision(form: object, page: object, waiting: bool) -> Decision | None:
    """The form's answer when the user gave one (accept: what it says; decline: deny); else
    None (the page decides) when the user accepted to open the page, or the round was a
    wait for it; else deny (dismissed everywhere)."""
    if isinstance(form, mcp_types.ElicitResult) and form.action == "accept":
        return form_decision(form.content)
    if isinstance(form, mcp_types.ElicitResult) and form.action == "decline":
        return "deny"
    opened = isinstance(page, mcp_types.ElicitResult) and page.action == "accept"
    return None if opened or waiting else "deny"


def sessionless_id(principal: Principal, client: str) -> str:
    """The session of a modern client (grants "for a while", the audit's session id): stable
    for one principal and client name."""
    key = f"{principal.subject}\0{client}"
    return "modern-" + hashlib.sha256(key.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class RoundApproval:
    """An :class:`~pegboard.calls.approval.ApprovalHandler` for one modern ``tools/call``:
    the verified answer of this retry if it is about exactly this call, else a new round.
    An answer left to the page waits ``page_wait`` seconds (the page's decision of the
    question, :attr:`resumes`, ends the wait in :func:`~pegboard.calls.approval.authorise`),
    then asks for another round."""

    answer: Answer | None
    page_wait: float = PAGE_WAIT_S
    name: str = "the client's user (form)"

    @property
    def resumes(self) -> str | None:
        """The pending question this retry answers (sealed in the first round's state)."""
        return self.answer.question if self.answer is not None else None

    def waits_for_page(self, request: ApprovalRequest) -> bool:
        """Whether this retry left ``request`` to the approval page."""
        answer = self.answer
        return answer is not None and answer.decision is None and answer.key == request.key

    async def request_approval(self, request: ApprovalRequest) -> Decision:
        if self.answer is None or self.answer.key != request.key:
            raise ApprovalPending(request)
        if self.answer.decision is not None:
            return self.answer.decision
        await anyio.sleep(self.page_wait)
        raise ApprovalPending(request)

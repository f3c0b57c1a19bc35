"""Approval: which calls need a human's yes, who is asked, and what a yes covers.

Every execution path (a direct call from the dispatcher, ``tool_invoke``, ``tool_exec``,
repair, the gateway) authorises through :func:`authorise`, so no route reaches a gated tool
without the same decision. A yes for the session or always is a
:class:`~pegboard.calls.grants.Grant` bound to the principal, the tool's *definition hash* and
the exact arguments: if a server changes the tool's description or schema, or the model sends
different arguments, the earlier approval no longer applies.
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import anyio
import anyio.to_thread

from pegboard.calls.grants import Grant, GrantKey, GrantScope, GrantStore
from pegboard.calls.pending import PendingApproval, PendingApprovalStore
from pegboard.calls.request import ApprovalRequest, Decision, arguments_fingerprint
from pegboard.core.entry import ToolEntry
from pegboard.core.names import legacy_mcp_tool_name
from pegboard.core.principal import ANONYMOUS_SUBJECT
from pegboard.core.tool import Tool, ToolContext
from pegboard.errors import ApprovalDenied, ApprovalNotPending, ApprovalRequired, ConfigError

__all__ = [
    "ApprovalHandler",
    "ApprovalOutcome",
    "ApprovalPending",
    "ApprovalRequest",
    "CallbackApprovalHandler",
    "Decision",
    "arguments_fingerprint",
    "authorise",
    "is_approval_gated",
]

logger = logging.getLogger("pegboard.calls.approval")

ApprovalOutcome: TypeAlias = Literal[
    "not_required",
    "granted_earlier",
    "allow_once",
    "allow_session",
    "allow_always",
    "denied",
    "required_no_handler",
]
"""How one call's approval was settled (the audit record's ``approval``)."""


async def is_approval_gated(tool: Tool, args: Mapping[str, Any], ctx: ToolContext) -> bool:
    """Whether this call of ``tool`` needs approval.

    ``needs_approval`` absent -> False; a bool -> itself; a callable (sync or async) -> its
    result. A callable that raises counts as gated: the check fails closed.
    """
    policy = tool.needs_approval
    if policy is None:
        return False
    if isinstance(policy, bool):
        return policy
    try:
        if inspect.iscoroutinefunction(policy):
            result: Any = await policy(dict(args), ctx)
        else:
            result = await anyio.to_thread.run_sync(lambda: policy(dict(args), ctx))
            if inspect.isawaitable(result):
                result = await result
    except Exception as exc:
        logger.warning("needs_approval of a tool raised %r; treating the call as gated", exc)
        return True
    return bool(result)


class ApprovalPending(ApprovalRequired):
    """Raised by a handler that cannot decide now but asks in a later round (the gateway's
    input-required rounds for 2026-07-28 clients): nothing ran, the human is being asked.
    ``approval_id``: the pending question this round asks (set by :func:`authorise`), which
    the retry answers (see :func:`authorise`'s ``resumes``)."""

    def __init__(self, request: ApprovalRequest, approval_id: str | None = None) -> None:
        super().__init__(
            f"Tool {request.tool_name} awaits the user's approval", tool_name=request.tool_name
        )
        self.request = request
        self.approval_id = approval_id


@runtime_checkable
class ApprovalHandler(Protocol):
    """Asks someone (a CLI prompt, MCP elicitation, a callback) to approve one call."""

    async def request_approval(self, request: ApprovalRequest) -> Decision: ...


ApprovalCallback: TypeAlias = Callable[[ApprovalRequest], Awaitable[Decision] | Decision]


@dataclass(frozen=True, slots=True)
class CallbackApprovalHandler:
    """An :class:`ApprovalHandler` around a plain function (sync or async)."""

    callback: ApprovalCallback

    async def request_approval(self, request: ApprovalRequest) -> Decision:
        answer = self.callback(request)
        if inspect.isawaitable(answer):
            return await answer
        return answer


async def authorise(
    entry: ToolEntry,
    args: Mapping[str, Any],
    ctx: ToolContext,
    *,
    via: str,
    handler: ApprovalHandler | None = None,
    grants: GrantStore | None = None,
    pending: PendingApprovalStore | None = None,
    principal: str = ANONYMOUS_SUBJECT,
    asked_by: str = "",
    gated: bool | None = None,
    session_id: str | None = None,
    grant_ttl: float | None = None,
) -> ApprovalOutcome:
    """Allow the call (saying how) or raise. The one authorisation step of every call path.

    Ungated calls pass (``not_required``; ``gated`` is the caller's own evaluation of the
    policy, so it runs once per call). A gated call passes when ``grants`` already covers it
    (this principal, definition hash and arguments, in session ``session_id``, by default the
    context's), or when ``handler`` approves it now: the question is a record of ``pending``
    (who asked, who decided, the reason) and a yes for the session or always becomes a grant.
    With no handler it raises :class:`ApprovalRequired`; a refusal (or a handler that fails)
    raises :class:`ApprovalDenied`. Nothing runs before this returns. With ``grant_ttl`` a
    yes for the session lapses after so many seconds (a sessionless client's "a while").
    """
    if gated is None:
        gated = await is_approval_gated(entry.tool, args, ctx)
    session_id = session_id or ctx.session_id
    if not gated:
        return "not_required"
    request = ApprovalRequest(
        tool_name=entry.name,
        namespace_label=entry.label,
        description=entry.summary,
        arguments=dict(args),
        definition_hash=entry.definition_hash,
        call_id=ctx.call_id,
        via=via,
    )
    key = GrantKey(principal, entry.name, entry.definition_hash, request.arguments_hash)
    if grants is not None and await grants.consume(key, session_id) is not None:
        return "granted_earlier"
    settle = getattr(handler, "settle", None)  # the approvals queue (calls.queue)
    if settle is not None and pending is not None:
        outcome: ApprovalOutcome = await settle(
            request,
            key,
            pending=pending,
            grants=grants,
            session_id=session_id,
            asked_by=asked_by or via,
        )
        return outcome
    if handler is None:
        if via in ("tool_invoke", "tool_exec"):
            raise ApprovalRequired(
                f"Tool {entry.name} requires user approval; call it directly instead of via "
                f"{via}, so the user can approve it.",
                tool_name=entry.name,
            )
        raise ApprovalRequired(
            f"Tool {entry.name} requires user approval and no approval handler is configured; "
            "pass approval_handler= to build_agent_params() or AgentSession() to allow gated "
            "tools.",
            tool_name=entry.name,
        )
    question = None
    if pending is not None:
        question = await _resumed(handler, request, pending, principal)
        if question is None:
            question = await pending.create(
                request, principal=principal, session_id=session_id, asked_by=asked_by or via
            )
    decision = await _ask(handler, request, pending, question)
    if decision == "deny":
        raise ApprovalDenied(
            f"The user denied the call to {entry.name}; it was not run. Do not retry it "
            "unchanged: ask the user or take another approach.",
            tool_name=entry.name,
        )
    scope = GRANT_SCOPES.get(decision)
    if grants is not None and scope is not None:
        who = handler_name(handler)
        until = time.time() + grant_ttl if scope == "session" and grant_ttl else None
        await grants.add(Grant(key, scope, session_id, granted_by=who, expires_at=until))
    return decision


GRANT_SCOPES: dict[Decision, GrantScope] = {"allow_session": "session", "allow_always": "always"}


def handler_name(handler: ApprovalHandler) -> str:
    """Who decided, for the records: a handler's ``name``, else its class name."""
    name = getattr(handler, "name", None)
    return name if isinstance(name, str) and name else type(handler).__name__


async def _resumed(
    handler: ApprovalHandler,
    request: ApprovalRequest,
    pending: PendingApprovalStore,
    principal: str,
) -> PendingApproval | None:
    """The question a later round answers (a handler's ``resumes``: the id an earlier round
    asked under), so the answer decides that record instead of leaving it open and asking a
    second one; only a question about exactly this call of this principal."""
    resumes = getattr(handler, "resumes", None)
    if not isinstance(resumes, str) or not resumes:
        return None
    question = await pending.get(resumes)
    if question is None or question.principal != principal or question.request.key != request.key:
        return None
    if question.decision is not None and not await pending.use(question.id):
        return None  # its decision was taken into account once already: ask anew
    return question


async def _ask(
    handler: ApprovalHandler,
    request: ApprovalRequest,
    pending: PendingApprovalStore | None,
    question: PendingApproval | None,
) -> Decision:
    """The decision on ``question``: the handler's answer (recorded on it), or one taken
    elsewhere meanwhile (an admin queue deciding the pending record), whichever comes first;
    the other is then cancelled. An expired question is a refusal."""
    if pending is None or question is None:
        return await _handler_decision(handler, request, None)
    refusal: list[ApprovalDenied] = []
    elsewhere: list[ApprovalRequired] = []

    async def from_handler() -> None:
        try:
            decision, reason = await _handler_decision(handler, request, question), ""
        except ApprovalDenied as exc:
            refusal.append(exc)
            decision, reason = "deny", str(exc)
        except ApprovalRequired as exc:  # asked in another round: the question stays pending
            elsewhere.append(exc)
            tg.cancel_scope.cancel()
            return
        with contextlib.suppress(ApprovalNotPending):  # decided elsewhere, or expired
            await pending.decide(
                question.id, decision, decided_by=handler_name(handler), reason=reason
            )

    final: PendingApproval | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(from_handler)
        final = await pending.wait(question.id)
        tg.cancel_scope.cancel()
    if elsewhere:
        if isinstance(elsewhere[0], ApprovalPending):
            elsewhere[0].approval_id = question.id
        raise elsewhere[0]
    assert final is not None
    if final.decision is None:
        raise ApprovalDenied(
            f"The approval request for {request.tool_name} expired unanswered; the call was "
            "not run.",
            tool_name=request.tool_name,
        )
    if final.decision == "deny":
        by_handler = final.decided_by == handler_name(handler)
        if refusal and by_handler:
            raise refusal[0]
        who = "The user" if by_handler else final.decided_by
        because = f" (reason: {final.reason})" if final.reason else ""
        raise ApprovalDenied(
            f"{who} denied the call to {request.tool_name}{because}; it was not run. Do not "
            "retry it unchanged: ask the user or take another approach.",
            tool_name=request.tool_name,
        )
    return final.decision


async def _handler_decision(
    handler: ApprovalHandler, request: ApprovalRequest, question: PendingApproval | None
) -> Decision:
    """The handler's answer; a handler with ``request_approval_of`` is told the question's
    record too (to send its user to the question's own page)."""
    of_question = getattr(handler, "request_approval_of", None)
    try:
        if of_question is not None and question is not None:
            decision: Decision = await of_question(request, question)
            return decision
        return await handler.request_approval(request)
    except (ApprovalDenied, ApprovalRequired):
        # the handler's own refusal (e.g. with the user's reason): keep its message; or its
        # "ask in another round" (the gateway's input-required rounds): nothing was decided
        raise
    except Exception as exc:
        raise ApprovalDenied(
            f"Approval of {request.tool_name} failed ({exc!r}); the call was not run.",
            tool_name=request.tool_name,
        ) from exc


def may_need_approval(tool: Tool) -> bool:
    """Static view for exposition: True unless the tool can never be gated.

    A callable policy may gate some calls, so such a tool counts as gated (never deferred).
    """
    return tool.needs_approval is not None and tool.needs_approval is not False


class GatedServer(Protocol):
    """The parts of an MCP server's config that gate tools (``McpServerConfig`` has them)."""

    @property
    def id(self) -> str: ...

    @property
    def force_prompt_tools(self) -> Collection[str]: ...

    @property
    def disabled_tools(self) -> Collection[str]: ...


def unmatched_gates(
    entries: Iterable[ToolEntry],
    *,
    servers: Iterable[GatedServer] = (),
    assistant_gates: Iterable[str] = (),
    assistant_disabled: Collection[str] = (),
) -> list[str]:
    """One message per configured approval gate (force-prompt entry) that gates no tool.

    A server's ``force_prompt_tools`` hold original tool names of that server; the
    assistant's hold wire names or ``"<server_id>/<tool name>"``. A bare name such as
    ``delete_file`` in the assistant's list matches nothing (the tool is
    ``mcp__srv__delete_file``), which is exactly the mistake that leaves a tool ungated, so
    it is reported with the names it probably meant. Servers with no registered tool (not
    listed yet, failing, disabled) cannot be checked and are skipped; so are gates on tools
    that are disabled anyway. Empty when every gate matches.
    """
    by_server: dict[str, dict[str, str]] = {}  # server id -> original name -> wire name
    wire_names: set[str] = set()
    for entry in entries:
        wire_names.add(entry.name)
        if entry.source is not None:
            by_server.setdefault(entry.source.server_id, {})[entry.source.tool_name] = entry.name
            # A gate written with the tool's pre-hyphen wire name still gates it.
            wire_names.add(legacy_mcp_tool_name(entry.source.server_id, entry.source.tool_name))
    problems: list[str] = []
    for server in servers:
        tools = by_server.get(server.id)
        if tools is None:
            continue
        for name in sorted(set(server.force_prompt_tools) - set(server.disabled_tools)):
            if name not in tools:
                near = difflib.get_close_matches(name, sorted(tools), n=3, cutoff=0.6)
                hint = f" Did you mean: {', '.join(near)}?" if near else ""
                problems.append(
                    f"force_prompt_tools of MCP server {server.id} lists {name!r}, but the "
                    f"server has no tool of that name, so nothing is gated.{hint} Use the "
                    "tool's name exactly as the server lists it (`pegboard tools list`)."
                )
    references = {
        f"{sid}/{tool}": wire for sid, tools in by_server.items() for tool, wire in tools.items()
    }
    for gate in sorted(set(assistant_gates) - set(assistant_disabled)):
        if gate in wire_names or gate in references:
            continue
        server_id, slash, _ = gate.partition("/")
        if slash and server_id not in by_server:
            continue
        meant = sorted(
            f"{wire} ({ref})"
            for ref, wire in references.items()
            if ref.rpartition("/")[2].casefold() == gate.rpartition("/")[2].casefold()
        )
        hint = f" Did you mean: {', '.join(meant[:3])}?" if meant else ""
        problems.append(
            f"Assistant force_prompt_tools lists {gate!r}, which matches no registered tool, "
            f"so nothing is gated.{hint} Use the wire name (mcp__<server>__<tool>) or "
            "'<server_id>/<tool name>'."
        )
    return problems


def check_gates(
    entries: Iterable[ToolEntry],
    *,
    servers: Iterable[GatedServer] = (),
    assistant_gates: Iterable[str] = (),
    assistant_disabled: Collection[str] = (),
    strict: bool = True,
) -> list[str]:
    """Fail loudly on approval gates that gate nothing (see :func:`unmatched_gates`).

    ``strict`` raises :class:`ConfigError` listing every problem (for startup); otherwise
    each is logged as a warning and the list returned (for a refresh while running).
    """
    problems = unmatched_gates(
        entries,
        servers=servers,
        assistant_gates=assistant_gates,
        assistant_disabled=assistant_disabled,
    )
    if problems and strict:
        raise ConfigError("\n".join(problems))
    for problem in problems:
        logger.warning("%s", problem)
    return problems

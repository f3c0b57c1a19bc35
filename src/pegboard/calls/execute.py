"""Running one resolved call: authorise, validate, execute, format.

The toolsets (:mod:`pegboard.toolsets`) compose these steps for every route (the agent
dispatcher, the gateway, ``pegboard tools call``); :func:`execute_entry` composes the same
steps for a meta-tool's inner call (``tool_invoke``, later ``tool_exec``), so approval and
validation apply the same way whichever route the model takes, and each call leaves exactly
one :class:`~pegboard.calls.audit.CallRecord`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from pegboard.calls.approval import authorise
from pegboard.calls.audit import audited
from pegboard.calls.session import Call
from pegboard.core.entry import ToolEntry
from pegboard.core.names import TOOL_INVOKE
from pegboard.core.output import ToolOutput
from pegboard.core.schema import apply_defaults, validate_arguments
from pegboard.core.tool import ToolContext
from pegboard.core.tracing import span, tracing_on
from pegboard.errors import (
    InvalidToolArguments,
    PegboardError,
    SchemaError,
    ToolExecutionError,
    ToolNotFound,
)

logger = logging.getLogger("pegboard.calls.execute")


async def authorise_call(call: Call, entry: ToolEntry) -> None:
    """The approval step of ``call`` (asks the session's handler when interactive).

    A tool that cannot run at all is reported first: nobody should approve a call that
    cannot happen. On an interactive route the arguments are validated before a human can
    be asked, so the human approves exactly what will run: invalid arguments go back to the
    caller (and the dispatcher's repair) first, and only the fixed call is shown. A
    non-interactive inner call (``tool_invoke``, ``tool_exec``) keeps its order, refusal of
    a gated tool before validation: it tells the model at once to call the tool directly,
    where validation, repair and the prompt happen, instead of after a futile fix.
    """
    _require_executor(entry)
    await check_access(call, entry)
    if call.interactive:
        done = call.checked  # a call plan's quick yes for these very arguments
        if done is None or done[0] is not entry or done[1] is not call.arguments:
            check_arguments(entry, call.arguments)
            call.checked = (entry, call.arguments)
    await settle_approval(call, entry)


async def check_access(call: Call, entry: ToolEntry) -> None:
    """Refuse ``call`` unless its principal may use ``entry`` (as unknown:
    :class:`ToolNotFound`, so the refusal says nothing of a tool it may not see) and is
    within its rate limits (:class:`~pegboard.errors.RateLimited`, with when to retry).
    ``tool_invoke`` itself takes nothing: its inner call is the call of a tool."""
    session = call.session
    if session.access is not None and not session.access.allows_entry(entry):
        raise ToolNotFound(call.name)
    if session.limits is not None and entry.name != TOOL_INVOKE:
        await session.limits.check(session.principal.subject, entry.name)


async def settle_approval(call: Call, entry: ToolEntry, *, gated: bool | None = None) -> None:
    """:func:`~pegboard.calls.approval.authorise` ``call`` with its session's handler (when
    interactive), grants, pending store and principal; the outcome is noted on ``call``."""
    session = call.session
    if gated is None:
        gated = session.gates.pop(call.ctx.call_id, None) if session.gates else None
    policy = entry.tool.needs_approval
    if gated is None and (policy is None or policy is False) and not tracing_on():
        call.approval = "not_required"  # authorise's answer for a policy of "never"
        return
    asked = authorise(  # runs where it is awaited: in the span when tracing
        entry,
        call.arguments,
        call.ctx,
        via=call.via,
        handler=session.approval_handler if call.interactive else None,
        grants=session.grants,
        pending=session.pending,
        principal=session.principal.subject,
        session_id=call.ctx.session_id or session.session_id,
        grant_ttl=session.grant_ttl,
        gated=gated,
    )
    if not tracing_on():  # no null context entered and left (as in calls.audit.audited)
        call.approval = await asked
        return
    with span("pegboard.approval", **{"gen_ai.tool.name": entry.name}) as current:
        call.approval = await asked
        if current is not None:
            current.set_attribute("pegboard.approval", call.approval)


async def run_entry(
    entry: ToolEntry, args: Mapping[str, Any], ctx: ToolContext, *, checked: bool = False
) -> ToolOutput:
    """Validate (filling schema defaults), run and format one authorised call.

    Validation sees the arguments as the model sent them (approval is bound to those); then
    the schema's top-level ``default``s fill missing properties. ``checked``: the approval
    step already checked these very arguments against ``entry``'s schema
    (:func:`authorise_call`), so only the defaults are filled (and checked). Failures of
    the tool itself become :class:`ToolExecutionError`.
    """
    _require_executor(entry)
    try:
        filled = _validated_with_defaults(entry, args, checked)
    except SchemaError as exc:
        raise ToolExecutionError(str(exc), tool_name=entry.name) from exc
    try:
        result = await entry.tool.run(filled, ctx)
    except PegboardError:
        raise
    except Exception as exc:
        raise ToolExecutionError(
            f"Tool {entry.name} failed: {type(exc).__name__}: {exc}", tool_name=entry.name
        ) from exc
    try:
        return entry.tool.to_model_output(result)
    except Exception as exc:
        raise ToolExecutionError(
            f"Tool {entry.name} ran but its result could not be formatted: {exc}",
            tool_name=entry.name,
        ) from exc


def check_arguments(entry: ToolEntry, args: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidToolArguments` unless ``args`` validate against ``entry``'s
    schema (a broken schema is the tool's failure: :class:`ToolExecutionError`)."""
    try:
        tool = entry.tool
        validate_arguments(tool.input_schema, dict(args), tool_name=entry.name, key=tool.schema_key)
    except SchemaError as exc:
        raise ToolExecutionError(str(exc), tool_name=entry.name) from exc


def _require_executor(entry: ToolEntry) -> None:
    if entry.tool.execute is None:
        raise ToolExecutionError(
            f"Tool {entry.name} has no execute handler; it cannot be called.",
            tool_name=entry.name,
        )


async def execute_entry(entry: ToolEntry, call: Call) -> ToolOutput:
    """Authorise, validate and run ``call`` of an already resolved ``entry``, audited.

    For a meta-tool's inner call (``tool_invoke``); routes call through a toolset instead.
    """

    async def body() -> ToolOutput:
        await authorise_call(call, entry)
        return await run_entry(entry, call.arguments, call.ctx)

    return await audited(call, body)


def _validated_with_defaults(
    entry: ToolEntry, args: Mapping[str, Any], checked: bool = False
) -> dict[str, Any]:
    """Validate what the model sent (unless ``checked``), then fill the schema's top-level
    defaults.

    A default that does not validate (a server declaring ``"type": "string", "default":
    null``) must not break a valid call: it is logged and the call runs as sent.
    """
    schema, key = entry.tool.input_schema, entry.tool.schema_key
    if not checked:
        validate_arguments(schema, dict(args), tool_name=entry.name, key=key)
    filled = apply_defaults(schema, args)
    if len(filled) == len(args):
        return filled
    try:
        validate_arguments(schema, filled, tool_name=entry.name, key=key)
    except InvalidToolArguments as exc:
        logger.warning("schema defaults of %s are invalid (%s); not applied", entry.name, exc)
        return dict(args)
    return filled


def error_output(
    exc: BaseException, lookup: Callable[[str], ToolEntry | None] | None = None
) -> ToolOutput:
    """The model-facing result of a failed call (the one error shape of every route).

    Invalid arguments come with the signature of the tool they were meant for (``lookup``
    finds it by the error's ``tool_name``, which is the inner tool for ``tool_invoke``).
    """
    if isinstance(exc, InvalidToolArguments) and exc.tool_name and lookup is not None:
        entry = lookup(exc.tool_name)
        if entry is not None:
            return ToolOutput.error(f"{exc}\nExpected signature:\n{entry.definition.stub()}")
    if isinstance(exc, PegboardError):
        return ToolOutput.error(str(exc))
    return ToolOutput.error(f"Tool call failed: {type(exc).__name__}: {exc}")

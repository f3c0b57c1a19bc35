"""Running one tool call: authorise, validate, execute, format. Every route goes through here.

The dispatcher (direct calls), ``tool_invoke`` and, later, ``tool_exec``, repair and the
gateway all call :func:`execute_entry`, so approval and validation apply the same way
whichever route the model takes, and each call leaves exactly one :class:`CallRecord`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pegboard.calls.approval import ApprovalGrants, ApprovalHandler, authorise
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.schema import apply_defaults, render_stub, validate_arguments
from pegboard.core.tool import ToolContext
from pegboard.errors import (
    InvalidToolArguments,
    PegboardError,
    SchemaError,
    ToolError,
    ToolExecutionError,
)

logger = logging.getLogger("pegboard.calls.execute")


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One audit record: which tool ran (or was refused), through which route, and how."""

    call_id: str
    tool_name: str
    via: str
    outcome: str  # "ok", "error", or the refusing error's class name
    seconds: float


AuditSink = Callable[[CallRecord], None]


@dataclass(slots=True)
class CallPolicy:
    """How a session authorises and audits calls (shared by every route)."""

    approval_handler: ApprovalHandler | None = None
    grants: ApprovalGrants = field(default_factory=ApprovalGrants)
    audit: AuditSink | None = None


def stub_of(entry: ToolEntry) -> str:
    tool = entry.tool
    return render_stub(entry.name, tool.description, tool.input_schema, tool.output_schema)


async def execute_entry(
    entry: ToolEntry,
    args: Mapping[str, Any],
    ctx: ToolContext,
    *,
    via: str,
    policy: CallPolicy,
    interactive: bool = True,
) -> ToolOutput:
    """Authorise, validate and run one call; raise a :class:`ToolError` if it cannot run.

    Approval and validation see the arguments as the model sent them (a grant is bound to
    those and to the definition hash, which fixes the defaults); then the schema's top-level
    ``default``s fill missing properties and the tool gets the filled arguments.

    ``interactive=False`` never asks the approval handler (``tool_invoke`` refuses gated
    tools instead). Failures of the tool itself become :class:`ToolExecutionError`.
    """
    started = time.perf_counter()
    outcome = "error"
    try:
        if entry.tool.execute is None:
            raise ToolExecutionError(
                f"Tool {entry.name} has no execute handler; it cannot be called.",
                tool_name=entry.name,
            )
        handler = policy.approval_handler if interactive else None
        await authorise(entry, args, ctx, via=via, handler=handler, grants=policy.grants)
        try:
            filled = _validated_with_defaults(entry, args)
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
            output = entry.tool.to_model_output(result)
        except Exception as exc:
            raise ToolExecutionError(
                f"Tool {entry.name} ran but its result could not be formatted: {exc}",
                tool_name=entry.name,
            ) from exc
        outcome = "ok"
        return output
    except ToolError as exc:
        outcome = type(exc).__name__
        raise
    finally:
        emit_record(policy, CallRecord(ctx.call_id, entry.name, via, outcome, elapsed(started)))


def _validated_with_defaults(entry: ToolEntry, args: Mapping[str, Any]) -> dict[str, Any]:
    """Validate what the model sent, then fill the schema's top-level defaults.

    A default that does not validate (a server declaring ``"type": "string", "default":
    null``) must not break a valid call: it is logged and the call runs as sent.
    """
    schema = entry.tool.input_schema
    validate_arguments(schema, dict(args), tool_name=entry.name)
    filled = apply_defaults(schema, args)
    if len(filled) == len(args):
        return filled
    try:
        validate_arguments(schema, filled, tool_name=entry.name)
    except InvalidToolArguments as exc:
        logger.warning("schema defaults of %s are invalid (%s); not applied", entry.name, exc)
        return dict(args)
    return filled


def elapsed(started: float) -> float:
    return time.perf_counter() - started


def emit_record(policy: CallPolicy, record: CallRecord) -> None:
    """Hand ``record`` to the session's audit sink (a failing sink is logged, not raised).

    Routes that refuse a call before :func:`execute_entry` (an unknown name) call this
    themselves, so every call leaves exactly one record.
    """
    if policy.audit is None:
        return
    try:
        policy.audit(record)
    except Exception:
        logger.exception("audit sink failed")


def error_output(
    exc: BaseException, lookup: Callable[[str], ToolEntry | None] | None = None
) -> ToolOutput:
    """The model-facing result of a failed call.

    Invalid arguments come with the signature of the tool they were meant for (``lookup``
    finds it by the error's ``tool_name``, which is the inner tool for ``tool_invoke``).
    """
    if isinstance(exc, InvalidToolArguments) and exc.tool_name and lookup is not None:
        entry = lookup(exc.tool_name)
        if entry is not None:
            return ToolOutput.error(f"{exc}\nExpected signature:\n{stub_of(entry)}")
    if isinstance(exc, PegboardError):
        return ToolOutput.error(str(exc))
    return ToolOutput.error(f"Tool call failed: {type(exc).__name__}: {exc}")

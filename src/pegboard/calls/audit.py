"""The audit record every call leaves (exactly one, refused and unknown calls included)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pegboard.calls.approval import ApprovalOutcome, arguments_fingerprint
from pegboard.core.redact import redact_url
from pegboard.errors import ApprovalDenied, ApprovalRequired, ToolError

if TYPE_CHECKING:
    from pegboard.calls.session import Call

logger = logging.getLogger("pegboard.calls.audit")


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One audit record: which tool ran (or was refused), through which route, and how.

    ``time`` is the wall clock (Unix seconds) when the call arrived; ``tool`` the wire name, or
    for a resource read the URI with credentials and secret-looking parameters masked;
    ``arguments_sha256`` the sha256 of the arguments' canonical JSON (the arguments themselves
    may hold secrets);
    ``outcome`` is ``"ok"``, ``"error"`` (an unexpected exception) or the refusing
    :class:`~pegboard.errors.ToolError`'s class name; ``duration`` is in seconds.
    """

    time: float
    via: str
    tool: str
    call_id: str
    session_id: str | None
    arguments_sha256: str
    approval: ApprovalOutcome
    outcome: str
    duration: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


AuditSink = Callable[[CallRecord], None]
T = TypeVar("T")


async def audited(call: Call, body: Callable[[], Awaitable[T]]) -> T:
    """Run ``body`` (the rest of the call path) and leave exactly one record for ``call``.

    ``body`` returns a :class:`~pegboard.core.output.ToolOutput` for tools; the gateway's
    resource reads and prompt gets return the MCP result itself.
    """
    arrived, started = time.time(), time.perf_counter()
    outcome = "error"
    check = getattr(call.session.audit, "check", None)  # on_failure = "refuse" (AuditLog)
    try:
        if check is not None:
            check()
        output = await body()
        outcome = "ok"
        return output
    except ToolError as exc:
        outcome = type(exc).__name__
        if isinstance(exc, ApprovalDenied) and exc.tool_name == call.name:
            call.approval = "denied"
        elif isinstance(exc, ApprovalRequired) and exc.tool_name == call.name:
            call.approval = "required_no_handler"
        raise
    finally:
        record = CallRecord(
            time=arrived,
            via=call.via,
            tool=redact_url(call.name) if "://" in call.name else call.name,  # resource URIs
            call_id=call.ctx.call_id,
            session_id=call.ctx.session_id or call.session.session_id,
            arguments_sha256=arguments_fingerprint(call.arguments),
            approval=call.approval,
            outcome=outcome,
            duration=time.perf_counter() - started,
        )
        emit_record(call.session.audit, record)


def emit_record(sink: AuditSink | None, record: CallRecord) -> None:
    """Hand ``record`` to the audit sink; a failing sink is logged, never raised."""
    if sink is None:
        return
    try:
        sink(record)
    except Exception:
        logger.exception("audit sink failed")

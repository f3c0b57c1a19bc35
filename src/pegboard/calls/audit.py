"""The audit record every call leaves (exactly one, refused and unknown calls included)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar, runtime_checkable

import anyio

from pegboard.calls.approval import ApprovalOutcome, arguments_fingerprint
from pegboard.core.frozen import quick_init
from pegboard.core.redact import redact_url
from pegboard.core.tracing import span, tracing_on
from pegboard.errors import ApprovalDenied, ApprovalRequired, ToolError

if TYPE_CHECKING:
    from pegboard.calls.session import Call

logger = logging.getLogger("pegboard.calls.audit")


@quick_init
@dataclass(frozen=True, slots=True)
class CallRecord:
    """One audit record: which tool ran (or was refused), through which route, and how.

    ``time`` is the wall clock (Unix seconds) when the call arrived; ``tool`` the wire name, or
    for a resource read the URI with credentials and secret-looking parameters masked;
    ``arguments_sha256`` the sha256 of the arguments' canonical JSON (the arguments themselves
    may hold secrets);
    ``outcome`` is ``"ok"``, ``"error"`` (an unexpected exception) or the refusing
    :class:`~pegboard.errors.ToolError`'s class name; ``duration`` is in seconds;
    ``principal`` is who the call ran for, ``client`` the MCP client (or None), and
    ``error_class`` the class of the exception that ended the call (None when it succeeded).
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
    principal: str = "anonymous"
    client: str | None = None
    error_class: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class AsyncAuditSink(Protocol):
    """Where records go, a batch at a time, without blocking the event loop (the audit file
    writes in a worker thread; a database sink would insert the batch in one statement)."""

    async def write(self, records: Sequence[CallRecord]) -> None: ...


HandOff: TypeAlias = Callable[[Sequence[CallRecord]], None]
"""A sink's synchronous hand-off (its ``hand_off`` attribute): takes a batch at once, on the
loop, and never waits (the audit log queues it for its writer thread). A sink whose ``write``
may wait (the log under ``on_failure = "refuse"``, a database sink) has none (None)."""


AuditSink: TypeAlias = AsyncAuditSink | Callable[[CallRecord], None]
"""An :class:`AsyncAuditSink`, or a plain function called with each record on the loop (a
list's ``append`` in tests and small programs)."""
T = TypeVar("T")


async def audited(call: Call, body: Callable[[], Awaitable[T]]) -> T:
    """Run ``body`` (the rest of the call path) and leave exactly one record for ``call``.

    ``body`` returns a :class:`~pegboard.core.output.ToolOutput` for tools; the gateway's
    resource reads and prompt gets return the MCP result itself. With tracing on, the call is
    a ``pegboard.call`` span (:mod:`pegboard.core.tracing`) with its outcome.
    """
    if not tracing_on():  # no span: no null context entered and left either (~1% of a call)
        return await _audited(call, body, None)
    with span("pegboard.call", **{"gen_ai.tool.name": call.name, "pegboard.route": call.via}) as s:
        return await _audited(call, body, s)


async def _audited(call: Call, body: Callable[[], Awaitable[T]], current: Any) -> T:
    arrived, started = time.time(), time.perf_counter()
    outcome, error_class = "error", None
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
    except BaseException as exc:
        error_class = type(exc).__name__
        raise
    finally:
        if current is not None:
            current.set_attribute("pegboard.outcome", outcome)
            current.set_attribute("pegboard.approval", call.approval)
        session = call.session
        record = CallRecord(
            time=arrived,
            via=call.via,
            tool=redact_url(call.name) if "://" in call.name else call.name,  # resource URIs
            call_id=call.ctx.call_id,
            session_id=call.ctx.session_id or session.session_id,
            arguments_sha256=arguments_fingerprint(call.arguments),
            approval=call.approval,
            outcome=outcome,
            duration=time.perf_counter() - started,
            principal=session.principal.subject,
            client=session.client,
            error_class=outcome if error_class is None and outcome != "ok" else error_class,
        )
        hand_off = hand_off_of(session.audit)
        if hand_off is not None:  # taken at once: nothing a cancel could cut short
            _hand_off(hand_off, (record,))
        else:
            with anyio.CancelScope(shield=True):  # a cancelled call is recorded all the same
                await emit_record(session.audit, record)


def hand_off_of(sink: AuditSink | None) -> HandOff | None:
    """``sink``'s synchronous hand-off (:data:`HandOff`), or None when its ``write`` may wait
    (then the record is awaited in a shielded scope): a plain function sink is one."""
    if sink is None:
        return None
    if not hasattr(sink, "write"):
        return partial(_each, sink)
    hand_off: HandOff | None = getattr(sink, "hand_off", None)
    return hand_off


def _each(sink: Callable[[CallRecord], None], records: Sequence[CallRecord]) -> None:
    for record in records:
        sink(record)


def _hand_off(hand_off: HandOff, records: Sequence[CallRecord]) -> None:
    """Give ``records`` to a sink's hand-off; a failing sink is logged, never raised."""
    try:
        hand_off(records)
    except Exception:
        logger.exception("audit sink failed")


async def emit_record(sink: AuditSink | None, record: CallRecord) -> None:
    """Hand ``record`` to the audit sink; a failing sink is logged, never raised."""
    if sink is None:
        return
    try:
        # What isinstance(sink, AsyncAuditSink) checks, without a runtime protocol check's
        # cost (~10 us per call, twice per call through the runtime's fan-out).
        write = getattr(sink, "write", None)
        if write is not None:
            await write((record,))
        else:
            sink(record)  # type: ignore[operator]
    except Exception:
        logger.exception("audit sink failed")


class FanOut:
    """Every record to each of ``sinks`` (the audit file and a sink of the caller's), then to
    ``then`` (the runtime publishes it on its event bus); ``check`` is the first sink's
    pre-call check (the audit log's ``on_failure = "refuse"``), kept on the fan-out."""

    def __init__(
        self,
        sinks: Sequence[AuditSink],
        *,
        then: Callable[[CallRecord], None] | None = None,
        check: Callable[[], None] | None = None,
    ) -> None:
        self._sinks = tuple(sinks)
        self._then = then
        if check is not None:
            self.check = check
        # Every sink takes its records at once (the audit log under "warn", plain functions):
        # the fan-out does too, with no shielded await per call (~3% of a proxied call).
        self._hand_offs = tuple(hand_off_of(sink) for sink in self._sinks)
        self.hand_off: HandOff | None = None
        if all(h is not None for h in self._hand_offs):
            self.hand_off = self._hand_off_each

    def _hand_off_each(self, records: Sequence[CallRecord]) -> None:
        for hand_off in self._hand_offs:
            assert hand_off is not None
            _hand_off(hand_off, records)
        self._listeners(records)

    async def write(self, records: Sequence[CallRecord]) -> None:
        for sink in self._sinks:
            for record in records:
                await emit_record(sink, record)
        self._listeners(records)

    def _listeners(self, records: Sequence[CallRecord]) -> None:
        if self._then is not None:
            for record in records:
                try:
                    self._then(record)
                except Exception:
                    logger.exception("audit listener failed")


class Batching:
    """Batches concurrent writes to ``sink``: while one batch is written, records of other
    calls queue and go in the next batch, written by the same writer. Each caller's record
    is written before its call returns (nothing is lost with the process), and uncontended
    calls pay for one write each."""

    def __init__(self, write: Callable[[Sequence[Any]], Awaitable[None]]) -> None:
        self._write = write
        self._queued: list[Any] = []
        self._writing = False
        self._taken = 0  # batches taken for writing
        self._done = 0  # batches written (or failed)
        self._written: anyio.Event | None = None

    async def submit(self, records: Sequence[Any]) -> None:
        self._queued.extend(records)
        ticket = self._taken + 1  # the batch that will carry these records
        if self._writing:  # the writer takes them next; wait until they are down
            while self._done < ticket:
                if self._written is None:
                    self._written = anyio.Event()
                await self._written.wait()
            return
        self._writing = True
        try:
            while self._queued:
                batch, self._queued = self._queued, []
                self._taken += 1
                try:
                    await self._write(batch)
                finally:
                    self._done = self._taken
                    written, self._written = self._written, None
                    if written is not None:
                        written.set()
        finally:
            self._writing = False

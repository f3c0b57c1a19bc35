"""The audit record of each call, as a library user sees it (through the façade)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from pegboard import (
    AgentSession,
    ApprovalRequest,
    CallbackApprovalHandler,
    CallRecord,
    Decision,
    ModelInfo,
    Tool,
    ToolApplyScope,
    ToolCall,
    ToolEntry,
    ToolRegistry,
    build_agent_params,
)
from pegboard.calls.audit import FanOut
from pegboard.calls.audit_log import AuditLog

pytestmark = pytest.mark.anyio
MODEL = ModelInfo("gpt-test", "openai", 128_000)


def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def registry() -> ToolRegistry:
    gated = Tool.from_function(delete, needs_approval=True)
    return ToolRegistry([ToolEntry("delete", "files", gated)])


async def test_each_call_records_how_its_approval_was_settled_and_a_hash_of_its_arguments() -> None:
    answers: list[Decision] = ["deny", "allow_session", "allow_once"]

    def decide(request: ApprovalRequest) -> Decision:
        return answers.pop(0)

    records: list[CallRecord] = []
    session = AgentSession(approval_handler=CallbackApprovalHandler(decide), audit=records.append)
    params = build_agent_params(registry(), ToolApplyScope(), MODEL, session=session)
    before = time.time()
    for i, path in enumerate(["/a", "/b", "/b", "/c"]):
        await params.dispatcher.call(ToolCall(f"c{i}", "delete", {"path": path}))

    assert [(r.call_id, r.approval, r.outcome) for r in records] == [
        ("c0", "denied", "ApprovalDenied"),
        ("c1", "allow_session", "ok"),
        ("c2", "granted_earlier", "ok"),
        ("c3", "allow_once", "ok"),
    ]
    assert {(r.via, r.tool, r.session_id) for r in records} == {
        ("direct", "delete", session.session_id)
    }
    assert records[0].arguments_sha256 == hashlib.sha256(b'{"path":"/a"}').hexdigest()
    assert all(before <= r.time <= time.time() and r.duration >= 0 for r in records)
    assert records[0].to_json()["approval"] == "denied"


async def test_without_a_handler_a_gated_call_is_refused_with_how_to_attach_one() -> None:
    records: list[CallRecord] = []
    params = build_agent_params(registry(), ToolApplyScope(), MODEL, audit=records.append)

    out = await params.dispatcher.call(ToolCall("c1", "delete", {"path": "/a"}))

    assert out.as_text() == (
        "Tool delete requires user approval and no approval handler is configured; pass "
        "approval_handler= to build_agent_params() or AgentSession() to allow gated tools."
    )
    assert [(r.approval, r.outcome) for r in records] == [
        ("required_no_handler", "ApprovalRequired")
    ]


async def test_the_approval_handler_argument_of_build_agent_params_is_asked() -> None:
    asked: list[str] = []

    def decide(request: ApprovalRequest) -> Decision:
        asked.append(request.tool_name)
        return "allow_once"

    handler = CallbackApprovalHandler(decide)
    params = build_agent_params(registry(), ToolApplyScope(), MODEL, approval_handler=handler)

    out = await params.dispatcher.call(ToolCall("c1", "delete", {"path": "/a"}))

    assert (out.as_text(), asked) == ("deleted /a", ["delete"])


class WaitingSink:
    """An async sink whose write waits (as a database sink's does): no hand-off."""

    def __init__(self) -> None:
        self.records: list[CallRecord] = []

    async def write(self, records: Sequence[CallRecord]) -> None:
        await anyio.sleep(0.05)
        self.records.extend(records)


def test_a_fan_out_hands_records_off_at_once_only_when_every_sink_takes_them_at_once(
    tmp_path: Path,
) -> None:
    heard: list[CallRecord] = []
    warn, refuse = (
        AuditLog(tmp_path / "a.jsonl"),
        AuditLog(tmp_path / "b.jsonl", on_failure="refuse"),
    )
    direct: list[CallRecord] = []
    fan_out = FanOut([warn, direct.append], then=heard.append)
    assert warn.hand_off is not None
    assert refuse.hand_off is None
    assert FanOut([warn, refuse]).hand_off is None
    assert FanOut([warn, WaitingSink()]).hand_off is None
    assert fan_out.hand_off is not None

    record = CallRecord(1.0, "direct", "t", "c1", None, "0" * 64, "not_required", "ok", 0.0)
    fan_out.hand_off([record])

    assert direct == heard == [record]  # on the spot, before any await
    warn.flush()
    assert [r["call_id"] for r in warn.tail(5)] == ["c1"]


async def test_a_failing_sink_is_logged_and_neither_stops_the_call_nor_the_other_sinks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(record: CallRecord) -> None:
        raise OSError("disk full")

    heard: list[CallRecord] = []
    direct: list[CallRecord] = []
    fan_out = FanOut([broken, direct.append], then=heard.append)
    record = CallRecord(1.0, "direct", "t", "c1", None, "0" * 64, "not_required", "ok", 0.0)
    with caplog.at_level("ERROR", logger="pegboard.calls.audit"):
        assert fan_out.hand_off is not None
        fan_out.hand_off([record])
        assert direct == heard == [record]

        # A lone failing sink on a call: the call still answers.
        params = build_agent_params(registry(), ToolApplyScope(), MODEL, audit=broken)
        out = await params.dispatcher.call(ToolCall("c2", "delete", {"path": "/a"}))
    assert out.as_text().startswith("Tool delete requires user approval")
    assert [r.getMessage() for r in caplog.records] == ["audit sink failed"] * 2


@pytest.mark.parametrize("waits", [False, True], ids=["hand-off", "awaited sink"])
async def test_a_cancelled_call_leaves_its_record_whether_the_sink_waits_or_not(
    tmp_path: Path, waits: bool
) -> None:
    started = anyio.Event()

    async def block(token: str) -> str:
        """Wait until cancelled."""
        started.set()
        await anyio.sleep_forever()
        return token

    log, waiting = AuditLog(tmp_path / "audit.jsonl"), WaitingSink()
    sink = FanOut([waiting] if waits else [log])
    tools = ToolRegistry([ToolEntry("block", "t", Tool.from_function(block))])
    params = build_agent_params(tools, ToolApplyScope(), MODEL, audit=sink)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(params.dispatcher.call, ToolCall("c1", "block", {"token": "x"}))
            await started.wait()
            tg.cancel_scope.cancel()

    if waits:
        found = [(r.call_id, r.outcome, r.error_class) for r in waiting.records]
    else:
        log.flush()
        found = [(r["call_id"], r["outcome"], r["error_class"]) for r in log.tail(5)]
    assert found == [("c1", "error", "CancelledError")]

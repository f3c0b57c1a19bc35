"""The audit record of each call, as a library user sees it (through the façade)."""

from __future__ import annotations

import hashlib
import time

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

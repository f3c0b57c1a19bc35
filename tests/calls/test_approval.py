import logging
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from pegboard.calls.approval import (
    ApprovalRequest,
    CallbackApprovalHandler,
    Decision,
    authorise,
    check_gates,
    is_approval_gated,
    unmatched_gates,
)
from pegboard.calls.grants import MemoryGrantStore
from pegboard.calls.grants_sqlite import SqliteGrantStore
from pegboard.calls.pending import MemoryPendingStore
from pegboard.calls.pending_sqlite import SqlitePendingStore
from pegboard.core.entry import ToolEntry, ToolSource
from pegboard.core.scope import ToolApplyScope
from pegboard.core.tool import Tool, ToolContext
from pegboard.errors import ApprovalDenied, ApprovalRequired, ConfigError
from pegboard.mcp.config import McpServerConfig
from tests.deferral.factories import entry

CTX = ToolContext(
    call_id="call-7",
    messages=({"role": "user", "content": "hi"},),
    scope=ToolApplyScope(mcp_tool_ids=frozenset({"t"})),
)


@pytest.mark.anyio
async def test_an_absent_policy_is_not_gated() -> None:
    assert await is_approval_gated(Tool(description="x"), {}, CTX) is False


@pytest.mark.anyio
@pytest.mark.parametrize("value", [True, False])
async def test_a_boolean_policy_is_honoured(value: bool) -> None:
    assert await is_approval_gated(Tool(description="x", needs_approval=value), {}, CTX) is value


@pytest.mark.anyio
async def test_a_sync_callable_gets_the_arguments_and_the_context() -> None:
    seen: list[tuple[dict[str, Any], ToolContext]] = []

    def policy(args: dict[str, Any], ctx: ToolContext) -> bool:
        seen.append((args, ctx))
        return args["path"].startswith("/etc")

    tool = Tool(description="x", needs_approval=policy)
    assert await is_approval_gated(tool, {"path": "/etc/passwd"}, CTX) is True
    assert await is_approval_gated(tool, {"path": "/tmp/x"}, CTX) is False
    assert seen[0] == ({"path": "/etc/passwd"}, CTX)
    assert seen[0][1].call_id == "call-7"
    assert seen[0][1].messages == ({"role": "user", "content": "hi"},)
    assert seen[0][1].scope == ToolApplyScope(mcp_tool_ids=frozenset({"t"}))


@pytest.mark.anyio
async def test_an_async_callable_is_awaited() -> None:
    async def policy(args: dict[str, Any], ctx: ToolContext) -> bool:
        return bool(args.get("dangerous"))

    tool = Tool(description="x", needs_approval=policy)
    assert await is_approval_gated(tool, {"dangerous": True}, CTX) is True
    assert await is_approval_gated(tool, {}, CTX) is False


@pytest.mark.anyio
async def test_a_callable_that_raises_fails_closed() -> None:
    def broken(args: dict[str, Any], ctx: ToolContext) -> bool:
        raise KeyError("missing")

    async def broken_async(args: dict[str, Any], ctx: ToolContext) -> bool:
        raise RuntimeError("down")

    assert await is_approval_gated(Tool(description="x", needs_approval=broken), {}, CTX) is True
    gated = Tool(description="x", needs_approval=broken_async)
    assert await is_approval_gated(gated, {}, CTX) is True


class Scripted:
    """An approval handler answering from a script and remembering what it was asked."""

    def __init__(self, *answers: Decision) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def request_approval(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return self.answers.pop(0)


DELETE = entry("delete_file", description="Delete a file.", needs_approval=True)


@pytest.mark.anyio
async def test_an_ungated_call_needs_no_handler() -> None:
    await authorise(entry("read_file"), {"query": "x"}, CTX, via="direct")


@pytest.mark.anyio
async def test_a_gated_call_without_a_handler_requires_approval() -> None:
    with pytest.raises(ApprovalRequired, match="no approval handler is configured"):
        await authorise(DELETE, {"query": "/x"}, CTX, via="direct")


@pytest.mark.anyio
async def test_the_handler_sees_the_real_tool_and_arguments_and_a_denial_raises() -> None:
    handler = Scripted("deny")
    with pytest.raises(ApprovalDenied, match="The user denied the call to delete_file"):
        await authorise(DELETE, {"query": "/x"}, CTX, via="direct", handler=handler)
    [request] = handler.asked
    assert (request.tool_name, dict(request.arguments), request.call_id) == (
        "delete_file",
        {"query": "/x"},
        "call-7",
    )
    assert request.definition_hash == DELETE.definition_hash
    assert request.description == "Delete a file."


@pytest.mark.anyio
async def test_allow_once_covers_one_call_only() -> None:
    handler, grants = Scripted("allow_once", "allow_once"), MemoryGrantStore()
    for _ in range(2):
        await authorise(DELETE, {"query": "/x"}, CTX, via="direct", handler=handler, grants=grants)
    assert len(handler.asked) == 2
    assert await grants.list() == []


@pytest.mark.anyio
@pytest.mark.parametrize("decision", ["allow_session", "allow_always"])
async def test_a_grant_covers_the_same_arguments_but_new_arguments_ask_again(
    decision: Decision,
) -> None:
    handler, grants = Scripted(decision, "deny"), MemoryGrantStore()
    await authorise(DELETE, {"query": "/a"}, CTX, via="direct", handler=handler, grants=grants)
    await authorise(DELETE, {"query": "/a"}, CTX, via="direct", handler=handler, grants=grants)
    assert len(handler.asked) == 1
    with pytest.raises(ApprovalDenied):
        await authorise(DELETE, {"query": "/b"}, CTX, via="direct", handler=handler, grants=grants)
    assert [dict(r.arguments) for r in handler.asked] == [{"query": "/a"}, {"query": "/b"}]


@pytest.mark.anyio
async def test_a_changed_definition_voids_an_earlier_approval() -> None:
    handler, grants = Scripted("allow_session", "allow_once"), MemoryGrantStore()
    await authorise(DELETE, {"query": "/a"}, CTX, via="direct", handler=handler, grants=grants)
    changed = entry("delete_file", description="Delete a file, recursively.", needs_approval=True)
    await authorise(changed, {"query": "/a"}, CTX, via="direct", handler=handler, grants=grants)
    assert len(handler.asked) == 2
    assert handler.asked[0].definition_hash != handler.asked[1].definition_hash


@pytest.mark.anyio
async def test_a_handler_that_fails_denies_the_call() -> None:
    def explode(request: ApprovalRequest) -> Decision:
        raise ConnectionError("prompt closed")

    handler = CallbackApprovalHandler(explode)
    with pytest.raises(ApprovalDenied, match="Approval of delete_file failed"):
        await authorise(DELETE, {"query": "/x"}, CTX, via="direct", handler=handler)


@pytest.mark.anyio
async def test_a_sync_callback_handler_can_approve() -> None:
    handler = CallbackApprovalHandler(lambda request: "allow_once")
    await authorise(DELETE, {"query": "/x"}, CTX, via="direct", handler=handler)


def mcp_entry(server_id: str, tool_name: str, wire: str) -> ToolEntry:
    return entry(wire, namespace=f"mcp:{server_id}", source=ToolSource(server_id, tool_name))


GATE_ENTRIES = [
    mcp_entry("srv", "delete_file", "mcp__srv__delete_file"),
    mcp_entry("srv", "read_file", "mcp__srv__read_file"),
    mcp_entry("git", "push", "mcp__git__push"),
    entry("web_search"),
]


def server(server_id: str, gates: list[str], disabled: tuple[str, ...] = ()) -> McpServerConfig:
    return McpServerConfig(
        id=server_id,
        command="x",
        force_prompt_tools=frozenset(gates),
        disabled_tools=frozenset(disabled),
    )


def test_gates_that_match_registered_tools_raise_nothing() -> None:
    gates = ["mcp__srv__delete_file", "git/push"]
    servers = [server("srv", ["delete_file"]), server("git", ["push"])]
    assert unmatched_gates(GATE_ENTRIES, servers=servers, assistant_gates=gates) == []
    assert check_gates(GATE_ENTRIES, servers=servers, assistant_gates=gates) == []


def test_a_bare_tool_name_in_the_assistant_gates_is_an_error_naming_what_it_meant() -> None:
    with pytest.raises(ConfigError) as caught:
        check_gates(GATE_ENTRIES, assistant_gates=["delete_file"])
    assert str(caught.value) == (
        "Assistant force_prompt_tools lists 'delete_file', which matches no registered tool, so "
        "nothing is gated. Did you mean: mcp__srv__delete_file (srv/delete_file)? Use the wire "
        "name (mcp__<server>__<tool>) or '<server_id>/<tool name>'."
    )


def test_a_misspelt_server_gate_is_an_error_with_suggestions() -> None:
    problems = unmatched_gates(GATE_ENTRIES, servers=[server("srv", ["delete_fle", "read_file"])])
    assert problems == [
        "force_prompt_tools of MCP server srv lists 'delete_fle', but the server has no tool of "
        "that name, so nothing is gated. Did you mean: delete_file? Use the tool's name exactly "
        "as the server lists it (`pegboard tools list`)."
    ]


def test_every_problem_is_reported_at_once_and_non_strict_mode_logs_warnings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    servers = [server("srv", ["wipe"]), server("git", ["force_push"])]
    with pytest.raises(ConfigError) as caught:
        check_gates(GATE_ENTRIES, servers=servers, assistant_gates=["MCP__SRV__DELETE_FILE"])
    assert len(str(caught.value).splitlines()) == 3
    with caplog.at_level(logging.WARNING, logger="pegboard.calls.approval"):
        problems = check_gates(GATE_ENTRIES, servers=servers, strict=False)
    assert [r.getMessage() for r in caplog.records] == problems
    assert [p.split(",")[0] for p in problems] == [
        "force_prompt_tools of MCP server srv lists 'wipe'",
        "force_prompt_tools of MCP server git lists 'force_push'",
    ]


def test_servers_without_registered_tools_and_disabled_tools_are_not_flagged() -> None:
    servers = [server("cold", ["anything"]), server("srv", ["gone"], disabled=("gone",))]
    gates = ["cold/anything", "mcp__srv__gone"]
    problems = unmatched_gates(
        GATE_ENTRIES, servers=servers, assistant_gates=gates, assistant_disabled={"mcp__srv__gone"}
    )
    assert problems == []


def test_a_gate_written_with_a_pre_hyphen_wire_name_still_matches() -> None:
    from pegboard.core.names import legacy_mcp_tool_name

    dashed = ToolEntry(
        "mcp__srv__drop-table", "mcp:srv", Tool("drop"), source=ToolSource("srv", "drop-table")
    )
    legacy = legacy_mcp_tool_name("srv", "drop-table")

    assert legacy != dashed.name
    assert unmatched_gates([dashed], assistant_gates=[legacy]) == []


@pytest.mark.anyio
async def test_each_question_is_a_pending_record_with_who_asked_and_who_decided(
    tmp_path: Path,
) -> None:
    handler, grants = Scripted("allow_session"), SqliteGrantStore(tmp_path / "a.db")
    pending = SqlitePendingStore(tmp_path / "a.db")
    ctx = ToolContext(call_id="c1", session_id="s1")
    outcome = await authorise(
        DELETE,
        {"query": "/a"},
        ctx,
        via="gateway",
        handler=handler,
        grants=grants,
        pending=pending,
        principal="alice",
        asked_by="gateway:inspector",
    )

    assert outcome == "allow_session"
    [question] = await pending.list(include_closed=True)
    assert (question.request, question.principal, question.session_id, question.asked_by) == (
        handler.asked[0],
        "alice",
        "s1",
        "gateway:inspector",
    )
    assert (question.decision, question.decided_by, question.reason) == (
        "allow_session",
        "Scripted",
        "",
    )
    [grant] = await grants.list()
    assert (grant.key.principal, grant.scope, grant.session_id, grant.granted_by) == (
        "alice",
        "session",
        "s1",
        "Scripted",
    )
    # The same call again in that session is covered; in another, or for bob, it is not.
    again = await authorise(
        DELETE, {"query": "/a"}, ctx, via="gateway", grants=grants, principal="alice"
    )
    assert again == "granted_earlier"
    for other_ctx, principal in ((ToolContext("c2", session_id="s2"), "alice"), (ctx, "bob")):
        with pytest.raises(ApprovalRequired):
            await authorise(
                DELETE,
                {"query": "/a"},
                other_ctx,
                via="gateway",
                grants=grants,
                principal=principal,
            )
    grants.close()
    pending.close()


class Waiting:
    """A handler that never answers (a prompt nobody reads) until it is cancelled."""

    cancelled = False

    async def request_approval(self, request: ApprovalRequest) -> Decision:
        try:
            await anyio.sleep_forever()
        finally:
            self.cancelled = True
        raise AssertionError("unreachable")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("decision", "expected"), [("allow_once", "allow_once"), ("deny", "admin denied")]
)
async def test_a_decision_taken_in_the_queue_resumes_the_call_and_stops_the_prompt(
    decision: Decision, expected: str
) -> None:
    pending, handler = MemoryPendingStore(), Waiting()
    outcome: list[str] = []

    async def call() -> None:
        try:
            outcome.append(
                await authorise(
                    DELETE, {"query": "/a"}, CTX, via="direct", handler=handler, pending=pending
                )
            )
        except ApprovalDenied as exc:
            outcome.append(str(exc))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            while not await pending.list():
                await anyio.lowlevel.checkpoint()
            [question] = await pending.list()
            await pending.decide(question.id, decision, decided_by="admin", reason="no")

    assert handler.cancelled is True
    assert outcome[0].startswith(expected)
    if decision == "deny":
        assert outcome[0].startswith("admin denied the call to delete_file (reason: no)")


@pytest.mark.anyio
async def test_an_unanswered_question_expires_into_a_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # the store's create is wrapped to ask with a 50 ms expiry
    pending = MemoryPendingStore()
    monkeypatch.setattr(pending, "create", _short(pending.create))
    with anyio.fail_after(5), pytest.raises(ApprovalDenied, match="expired unanswered"):
        await authorise(
            DELETE, {"query": "/a"}, CTX, via="direct", handler=Waiting(), pending=pending
        )
    [question] = await pending.list(include_closed=True)
    assert question.status() == "expired"


def _short(create: Any) -> Any:
    async def short(*args: Any, **kwargs: Any) -> Any:
        return await create(*args, **kwargs, ttl=0.05)

    return short

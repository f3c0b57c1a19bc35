from typing import Any

import pytest

from pegboard.approval import (
    ApprovalGrants,
    ApprovalRequest,
    CallbackApprovalHandler,
    Decision,
    authorise,
    is_approval_gated,
)
from pegboard.core.tool import Tool, ToolContext
from pegboard.errors import ApprovalDenied, ApprovalRequired
from tests.exposition.factories import entry

CTX = ToolContext(call_id="call-7", messages=({"role": "user", "content": "hi"},))


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
    handler, grants = Scripted("allow_once", "allow_once"), ApprovalGrants()
    for _ in range(2):
        await authorise(DELETE, {"query": "/x"}, CTX, via="direct", handler=handler, grants=grants)
    assert len(handler.asked) == 2
    assert len(grants) == 0


@pytest.mark.anyio
async def test_allow_always_covers_the_same_arguments_but_new_arguments_ask_again() -> None:
    handler, grants = Scripted("allow_always", "deny"), ApprovalGrants()
    await authorise(DELETE, {"query": "/a"}, CTX, via="direct", handler=handler, grants=grants)
    await authorise(DELETE, {"query": "/a"}, CTX, via="direct", handler=handler, grants=grants)
    assert len(handler.asked) == 1
    with pytest.raises(ApprovalDenied):
        await authorise(DELETE, {"query": "/b"}, CTX, via="direct", handler=handler, grants=grants)
    assert [dict(r.arguments) for r in handler.asked] == [{"query": "/a"}, {"query": "/b"}]


@pytest.mark.anyio
async def test_a_changed_definition_voids_an_earlier_approval() -> None:
    handler, grants = Scripted("allow_always", "allow_once"), ApprovalGrants()
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

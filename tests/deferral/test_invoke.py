import logging
from typing import Any

import pytest

from pegboard.calls import CallRecord, CallSession, error_output
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.registry import ToolRegistry
from pegboard.core.tool import Tool, ToolContext
from pegboard.deferral import DeferredPool, apply_defer_exposition, invoke_tool
from pegboard.deferral.tool_invoke import make_tool_invoke
from pegboard.errors import (
    ApprovalRequired,
    InvalidToolArguments,
    ToolError,
    ToolExecutionError,
    ToolNotFound,
)
from tests.deferral.factories import Calls, entry, pool_of, recorder, tools_of

CTX = ToolContext(call_id="outer-1")


def searcher(calls: Calls, **kw: Any) -> DeferredPool:
    target = entry("mcp__s1__t", namespace="mcp:s1", defer="always", execute=recorder(calls), **kw)
    return pool_of(target, entry("web_search", defer="always", execute=recorder(calls)))


@pytest.mark.anyio
async def test_params_are_forwarded_with_a_nested_call_id_and_schema_defaults() -> None:
    calls: Calls = []
    pool = searcher(calls)
    out = await invoke_tool(pool, "mcp__s1__t", {"query": "cats"}, CTX)
    assert out.as_text() == "ok"
    await invoke_tool(pool, "mcp__s1__t", {"query": "dogs", "limit": 3}, CTX)
    assert calls == [
        ("outer-1::mcp__s1__t", {"query": "cats", "limit": 10}, "mcp__s1__t"),
        ("outer-1::mcp__s1__t", {"query": "dogs", "limit": 3}, "mcp__s1__t"),
    ]


@pytest.mark.anyio
async def test_omitted_params_are_an_empty_object() -> None:
    calls: Calls = []
    pool = pool_of(
        entry("ping", defer="always", schema={"type": "object"}, execute=recorder(calls))
    )
    out = await make_tool_invoke(pool).run({"name": "ping"}, CTX)
    assert out.as_text() == "ok"
    assert calls == [("outer-1::ping", {}, "ping")]


@pytest.mark.anyio
async def test_a_call_whose_arguments_validate_runs_without_a_prior_inspect() -> None:
    calls: Calls = []
    pool = searcher(calls)
    await invoke_tool(pool, "web_search", {"query": "x"}, CTX)
    assert [c[0] for c in calls] == ["outer-1::web_search"]


@pytest.mark.anyio
async def test_an_unknown_name_is_not_found_with_did_you_mean() -> None:
    pool = searcher([])
    with pytest.raises(ToolNotFound) as caught:
        await invoke_tool(pool, "mcp__s1__tt", {}, CTX)
    assert str(caught.value) == "Tool not found: mcp__s1__tt. Did you mean: mcp__s1__t?"


@pytest.mark.anyio
async def test_a_tool_without_an_executor_is_refused() -> None:
    pool = pool_of(entry("display_only", defer="always"))
    with pytest.raises(ToolExecutionError, match="has no execute handler"):
        await invoke_tool(pool, "display_only", {"query": "x"}, CTX)


@pytest.mark.anyio
async def test_a_missing_executor_is_reported_before_the_approval_gate() -> None:
    asked: list[str] = []

    def gate(args: dict[str, Any], ctx: ToolContext) -> bool:
        asked.append(ctx.call_id)
        return True

    gated = entry("display_only", defer="never", needs_approval=gate)
    pool = pool_of(entry("other", defer="always"), inline=(gated,))
    with pytest.raises(ToolExecutionError) as caught:
        await invoke_tool(pool, "display_only", {"query": "x"}, CTX)
    assert str(caught.value) == ("Tool display_only has no execute handler; it cannot be called.")
    assert asked == []


async def async_gate(args: dict[str, Any], ctx: ToolContext) -> bool:
    return True


def raising_gate(args: dict[str, Any], ctx: ToolContext) -> bool:
    raise RuntimeError("policy store down")


@pytest.mark.anyio
@pytest.mark.parametrize("gate", [True, async_gate, raising_gate])
async def test_an_approval_gated_tool_is_refused_without_running(gate: Any) -> None:
    calls: Calls = []
    gated = entry("delete_file", defer="never", needs_approval=gate, execute=recorder(calls))
    registry = ToolRegistry([gated, entry("other", defer="always")])
    pool = apply_defer_exposition(tools_of(*registry.get_all()), registry, None).pool
    assert pool is not None
    with pytest.raises(ApprovalRequired) as caught:
        await invoke_tool(pool, "delete_file", {"query": "/etc"}, CTX)
    assert str(caught.value) == (
        "Tool delete_file requires user approval; call it directly instead of via tool_invoke, "
        "so the user can approve it."
    )
    assert calls == []


@pytest.mark.anyio
async def test_the_approval_gate_is_checked_before_the_arguments() -> None:
    calls: Calls = []
    gated = entry("delete_file", defer="never", needs_approval=True, execute=recorder(calls))
    registry = ToolRegistry([gated, entry("other", defer="always")])
    pool = apply_defer_exposition(tools_of(*registry.get_all()), registry, None).pool
    assert pool is not None
    with pytest.raises(ApprovalRequired):
        await invoke_tool(pool, "delete_file", {"query": 5}, CTX)


@pytest.mark.anyio
async def test_invalid_params_are_refused_with_the_signature() -> None:
    calls: Calls = []
    pool = searcher(calls)
    with pytest.raises(InvalidToolArguments) as caught:
        await invoke_tool(pool, "web_search", {"query": 3}, CTX)
    assert calls == []
    text = error_output(caught.value, pool.lookup).as_text()
    assert text.startswith('Invalid params for "web_search": query: expected string, got')
    assert "Expected signature:\n/**\n * Does one thing." in text
    assert text.endswith("function web_search(params) {}")


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["tool_invoke", "tool_exec", "tool_search", "tool_inspect"])
async def test_meta_tools_cannot_be_invoked_through_tool_invoke(name: str) -> None:
    with pytest.raises(ToolError, match=f"tool_invoke cannot act on the meta-tool {name}"):
        await invoke_tool(searcher([]), name, {"name": "web_search"}, CTX)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "name",
    ["DELETE_FILE", "delete_file ", "srv.delete_file", "mcp__srv__delete_file", "dеlete_file"],
)
async def test_near_miss_names_never_reach_a_tool_they_only_get_suggestions(name: str) -> None:
    calls: Calls = []
    target = entry("delete_file", defer="always", execute=recorder(calls))
    pool = pool_of(target, entry("read_file", defer="always", execute=recorder(calls)))
    with pytest.raises(ToolNotFound) as caught:
        await invoke_tool(pool, name, {"query": "x"}, CTX)
    assert caught.value.suggestions[0] == "delete_file"
    assert calls == []


@pytest.mark.anyio
async def test_the_inner_tools_formatter_shapes_the_result() -> None:
    def shout(result: Any) -> ToolOutput:
        return ToolOutput.text(str(result).upper())

    async def greet(args: dict[str, Any], ctx: ToolContext) -> str:
        return f"hello {args['who']}"

    tool = Tool(description="Greets.", execute=greet, to_model_output=shout)
    out = await invoke_tool(
        pool_of(ToolEntry("greet", "web", tool, defer="always")), "greet", {"who": "bob"}, CTX
    )
    assert out.as_text() == "HELLO BOB"


@pytest.mark.anyio
async def test_without_a_formatter_the_result_falls_back_to_json() -> None:
    async def count(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return {"call": ctx.call_id, "n": 2, "名": "值"}

    tool = Tool(description="Counts.", execute=count)
    out = await invoke_tool(
        pool_of(ToolEntry("count", "web", tool, defer="always")), "count", {}, CTX
    )
    assert out.as_text() == '{"call": "outer-1::count", "n": 2, "名": "值"}'
    assert out.structured == {"call": "outer-1::count", "n": 2, "名": "值"}
    assert out.is_error is False


@pytest.mark.anyio
async def test_a_failing_tool_becomes_an_execution_error_and_one_audit_record() -> None:
    async def boom(args: dict[str, Any], ctx: ToolContext) -> None:
        raise OSError("disk full")

    records: list[CallRecord] = []
    pool = pool_of(
        entry("save", defer="always", execute=boom), session=CallSession(audit=records.append)
    )
    with pytest.raises(ToolExecutionError, match=r"^Tool save failed: OSError: disk full$"):
        await invoke_tool(pool, "save", {"query": "x"}, CTX)
    assert [(r.call_id, r.tool, r.via, r.outcome) for r in records] == [
        ("outer-1::save", "save", "tool_invoke", "ToolExecutionError")
    ]


@pytest.mark.anyio
async def test_a_default_that_breaks_its_own_schema_is_not_applied(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: Calls = []
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "lang": {"type": "string", "default": None}},
        "required": ["q"],
    }
    pool = pool_of(entry("lookup", defer="always", schema=schema, execute=recorder(calls)))
    with caplog.at_level(logging.WARNING, logger="pegboard.calls.execute"):
        out = await invoke_tool(pool, "lookup", {"q": "x"}, CTX)
    assert out.as_text() == "ok"
    assert calls == [("outer-1::lookup", {"q": "x"}, "lookup")]
    assert [r.getMessage() for r in caplog.records] == [
        'schema defaults of lookup are invalid (Invalid params for "lookup": lang: expected '
        "string, got null); not applied"
    ]

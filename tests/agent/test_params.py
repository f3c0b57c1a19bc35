import json
from typing import Any

import anyio
import pytest

from pegboard.agent.params import AgentSession, build_agent_params
from pegboard.calls import CallRecord
from pegboard.calls.approval import ApprovalRequest, CallbackApprovalHandler, Decision
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ModelInfo, ToolApplyScope
from pegboard.core.tool import Tool, ToolContext
from pegboard.errors import ToolError
from pegboard.formats import ToolCall
from tests.deferral.factories import Calls, entry, heavy, recorder

SCOPE = ToolApplyScope()
GPT = ModelInfo("gpt-test", "openai", 32_000)
CLAUDE = ModelInfo("claude-test", "anthropic", 32_000)
META = ["tool_search", "tool_inspect", "tool_invoke"]


def big_registry(calls: Calls) -> ToolRegistry:
    deferred = [heavy(f"mcp__s1__t{i}", execute=recorder(calls, f"t{i} done")) for i in range(5)]
    inline = entry("web_search", defer="never", execute=recorder(calls, "found"))
    gated = entry("delete_file", needs_approval=True, execute=recorder(calls, "deleted"))
    return ToolRegistry([*deferred, inline, gated])


def chat_call(call_id: str, name: str, args: Any) -> dict[str, Any]:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def test_small_tool_sets_stay_inline_with_no_prompt_section() -> None:
    registry = ToolRegistry([entry("web_search", execute=recorder([]))])
    params = build_agent_params(registry, SCOPE, GPT)
    assert params.api == "openai_chat"
    assert [t["function"]["name"] for t in params.tools] == ["web_search"]
    assert params.system_prompt == ""


def test_a_large_pool_is_deferred_behind_the_meta_tools_and_gated_tools_stay_inline() -> None:
    params = build_agent_params(big_registry([]), SCOPE, GPT)
    names = [t["function"]["name"] for t in params.tools]
    assert names == ["delete_file", "web_search", *META]
    assert params.system_prompt.startswith("<deferred-tools>")
    assert "- mcp:s1 (5): mcp__s1__t0, mcp__s1__t1, mcp__s1__t2, mcp__s1__t3, …" in (
        params.system_prompt
    )


def test_the_tools_come_in_each_providers_format() -> None:
    registry = big_registry([])
    anthropic = build_agent_params(registry, SCOPE, CLAUDE)
    assert anthropic.api == "anthropic"
    assert [t["name"] for t in anthropic.tools][-3:] == META
    assert set(anthropic.tools[-1]) == {"name", "description", "input_schema"}
    responses = build_agent_params(registry, SCOPE, GPT, api="openai_responses")
    assert responses.tools[0]["type"] == "function"
    assert responses.tools[0]["name"] == "delete_file"
    assert responses.tools[0]["strict"] is False


def test_the_tool_list_is_byte_identical_across_turns_until_the_registry_changes() -> None:
    registry = big_registry([])
    session = AgentSession()
    first = build_agent_params(registry, SCOPE, GPT, session=session)
    second = build_agent_params(registry, SCOPE, GPT, session=session)
    fresh = build_agent_params(registry, SCOPE, GPT)
    dump = json.dumps(first.tools, sort_keys=False)
    assert second is first
    assert json.dumps(fresh.tools, sort_keys=False) == dump
    assert fresh.system_prompt == first.system_prompt
    registry.register(entry("web_fetch", defer="never"))
    third = build_agent_params(registry, SCOPE, GPT, session=session)
    assert json.dumps(third.tools, sort_keys=False) != dump
    assert set(third.dispatcher.tools.by_name) == set(first.dispatcher.tools.by_name) | {
        "web_fetch"
    }


@pytest.mark.anyio
async def test_calls_of_one_turn_run_concurrently_and_answer_in_call_order() -> None:
    first_started, second_started = anyio.Event(), anyio.Event()

    async def first(args: dict[str, Any], ctx: ToolContext) -> str:
        first_started.set()
        await second_started.wait()
        return "first"

    async def second(args: dict[str, Any], ctx: ToolContext) -> str:
        second_started.set()
        await first_started.wait()
        return "second"

    registry = ToolRegistry([entry("a", execute=first), entry("b", execute=second)])
    params = build_agent_params(registry, SCOPE, GPT)
    message = assistant(chat_call("c1", "a", {"query": "x"}), chat_call("c2", "b", {"query": "y"}))
    with anyio.fail_after(5):
        results = await params.dispatcher.respond(message)
    assert results == [
        {"role": "tool", "tool_call_id": "c1", "content": "first"},
        {"role": "tool", "tool_call_id": "c2", "content": "second"},
    ]


@pytest.mark.anyio
async def test_results_come_back_as_anthropic_tool_result_blocks() -> None:
    calls: Calls = []
    params = build_agent_params(big_registry(calls), SCOPE, CLAUDE)
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "tu1", "name": "web_search", "input": {"query": "q"}},
            {"type": "tool_use", "id": "tu2", "name": "nope", "input": {}},
        ],
    }
    results = await params.dispatcher.respond(message)
    assert results[0]["role"] == "user"
    ok, missing = results[0]["content"]
    assert ok == {
        "type": "tool_result",
        "tool_use_id": "tu1",
        "content": [{"type": "text", "text": "found"}],
    }
    assert missing["is_error"] is True
    assert missing["content"][0]["text"].startswith("Tool not found: nope.")
    assert calls == [("tu1", {"query": "q", "limit": 10}, "tu1")]


@pytest.mark.anyio
async def test_results_come_back_as_responses_function_call_outputs() -> None:
    params = build_agent_params(big_registry([]), SCOPE, GPT, api="openai_responses")
    response = {
        "output": [
            {
                "type": "function_call",
                "call_id": "fc1",
                "name": "web_search",
                "arguments": '{"query":"q"}',
            }
        ]
    }
    assert await params.dispatcher.respond(response) == [
        {"type": "function_call_output", "call_id": "fc1", "output": "found"}
    ]


@pytest.mark.anyio
async def test_invalid_arguments_come_back_with_the_signature() -> None:
    params = build_agent_params(big_registry([]), SCOPE, GPT)
    [result] = await params.dispatcher.respond(
        assistant(chat_call("c1", "web_search", {"query": 1}))
    )
    assert result["content"].startswith(
        'Error: Invalid params for "web_search": query: expected string, got'
    )
    assert result["content"].endswith("function web_search(params) {}")
    [broken] = await params.dispatcher.respond(assistant(chat_call("c2", "web_search", "{oops")))
    assert broken["content"].startswith(
        'Error: Invalid params for "web_search": arguments are not valid JSON'
    )


@pytest.mark.anyio
async def test_a_deferred_tool_called_directly_still_runs_through_the_checks() -> None:
    calls: Calls = []
    params = build_agent_params(big_registry(calls), SCOPE, GPT)
    out = await params.dispatcher.call(ToolCall("c9", "mcp__s1__t2", {"field_1": "v"}))
    assert out.as_text() == "t2 done"
    bad = await params.dispatcher.call(ToolCall("c10", "mcp__s1__t2", {"field_1": 3}))
    assert bad.is_error is True
    assert calls == [("c9", {"field_1": "v"}, "c9")]


@pytest.mark.anyio
async def test_a_gated_direct_call_asks_the_handler_and_a_denial_runs_nothing() -> None:
    calls: Calls = []
    asked: list[ApprovalRequest] = []

    def decide(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return "allow_once" if request.arguments["query"] == "/tmp/x" else "deny"

    session = AgentSession(approval_handler=CallbackApprovalHandler(decide))
    params = build_agent_params(big_registry(calls), SCOPE, GPT, session=session)
    denied = await params.dispatcher.call(ToolCall("c1", "delete_file", {"query": "/etc"}))
    allowed = await params.dispatcher.call(ToolCall("c2", "delete_file", {"query": "/tmp/x"}))
    assert denied.is_error is True
    assert denied.as_text().startswith("The user denied the call to delete_file")
    assert allowed.as_text() == "deleted"
    assert [(r.tool_name, dict(r.arguments), r.via) for r in asked] == [
        ("delete_file", {"query": "/etc"}, "direct"),
        ("delete_file", {"query": "/tmp/x"}, "direct"),
    ]
    assert calls == [("c2", {"query": "/tmp/x", "limit": 10}, "c2")]


@pytest.mark.anyio
async def test_tool_invoke_of_a_gated_tool_asks_the_handler_as_a_direct_call_does() -> None:
    calls: Calls = []
    asked: list[ApprovalRequest] = []
    answers = ["deny", "allow_once"]
    handler = CallbackApprovalHandler(lambda r: asked.append(r) or answers.pop(0))
    params = build_agent_params(big_registry(calls), SCOPE, GPT, approval_handler=handler)
    invoke = {"name": "delete_file", "params": {"query": "/etc"}}
    denied = await params.dispatcher.call(ToolCall("c1", "tool_invoke", invoke))
    allowed = await params.dispatcher.call(ToolCall("c2", "tool_invoke", invoke))

    assert denied.as_text().startswith("The user denied the call to delete_file")
    assert allowed.as_text() == "deleted"
    assert [(r.tool_name, r.call_id, r.via) for r in asked] == [
        ("delete_file", "c1::delete_file", "tool_invoke"),
        ("delete_file", "c2::delete_file", "tool_invoke"),
    ]
    assert [c[1]["query"] for c in calls] == ["/etc"]


@pytest.mark.anyio
async def test_tool_invoke_refuses_a_gated_tool_without_a_handler_and_runs_nothing() -> None:
    calls: Calls = []
    params = build_agent_params(big_registry(calls), SCOPE, GPT)
    out = await params.dispatcher.call(
        ToolCall("c1", "tool_invoke", {"name": "delete_file", "params": {"query": "/etc"}})
    )
    assert out.is_error is True
    assert "requires user approval; call it directly instead of via tool_invoke" in out.as_text()
    assert calls == []


@pytest.mark.anyio
async def test_every_call_leaves_exactly_one_audit_record_per_executed_tool() -> None:
    records: list[CallRecord] = []
    params = build_agent_params(big_registry([]), SCOPE, GPT, audit=records.append)
    await params.dispatcher.call(ToolCall("c1", "web_search", {"query": "q"}))
    await params.dispatcher.call(
        ToolCall("c2", "tool_invoke", {"name": "mcp__s1__t1", "params": {}})
    )
    await params.dispatcher.call(ToolCall("c3", "delete_file", {"query": "/"}))
    assert [(r.call_id, r.tool, r.via, r.outcome) for r in records] == [
        ("c1", "web_search", "direct", "ok"),
        ("c2::mcp__s1__t1", "mcp__s1__t1", "tool_invoke", "ok"),
        ("c2", "tool_invoke", "direct", "ok"),
        ("c3", "delete_file", "direct", "ApprovalRequired"),
    ]


@pytest.mark.anyio
async def test_a_repair_hook_gets_one_chance_to_fix_invalid_arguments() -> None:
    calls: Calls = []
    seen: list[str] = []

    async def repair(entry: Any, call: ToolCall, error: ToolError) -> dict[str, Any] | None:
        seen.append(str(error))
        return {"query": str(call.arguments["query"])}

    params = build_agent_params(big_registry(calls), SCOPE, GPT, repair=repair)
    out = await params.dispatcher.call(ToolCall("c1", "web_search", {"query": 42}))
    assert out.as_text() == "found"
    assert calls == [("c1", {"query": "42", "limit": 10}, "c1")]
    assert seen[0].startswith('Invalid params for "web_search"')


@pytest.mark.anyio
async def test_anthropic_native_loading_sends_deferred_tools_and_answers_with_references() -> None:
    calls: Calls = []
    params = build_agent_params(big_registry(calls), SCOPE, CLAUDE, native_defer=True)
    assert [(t["name"], t.get("defer_loading")) for t in params.tools] == [
        ("delete_file", None),
        ("web_search", None),
        ("tool_search", None),
        *((f"mcp__s1__t{i}", True) for i in range(5)),
    ]
    assert "tool_invoke" not in params.system_prompt
    assert "- tools that tool_search finds are loaded for you: call them directly by name" in (
        params.system_prompt
    )
    search = {"type": "tool_use", "id": "s1", "name": "tool_search", "input": {"query": "field 3"}}
    miss = {"type": "tool_use", "id": "s2", "name": "tool_search", "input": {"query": "zzqx"}}
    [message] = await params.dispatcher.respond({"role": "assistant", "content": [search, miss]})
    found, nothing = message["content"]
    assert found["tool_use_id"] == "s1"
    assert {"type": "tool_reference", "tool_name": "mcp__s1__t0"} in found["content"]
    assert all(block["type"] == "tool_reference" for block in found["content"])
    assert nothing["content"][0]["text"].startswith("No deferred tool matches 'zzqx'.")
    use = {"type": "tool_use", "id": "u1", "name": "mcp__s1__t0", "input": {"field_3": "v"}}
    [done] = await params.dispatcher.respond({"role": "assistant", "content": [use]})
    assert done["content"][0]["content"] == [{"type": "text", "text": "t0 done"}]


def test_native_loading_is_ignored_for_openai() -> None:
    params = build_agent_params(big_registry([]), SCOPE, GPT, native_defer=True)
    assert [t["function"]["name"] for t in params.tools][-3:] == META


def test_a_session_keeps_its_pool_deferred_when_it_shrinks_below_the_threshold() -> None:
    registry = ToolRegistry([heavy(f"mcp__s1__t{i}", fields=40) for i in range(6)])
    model = ModelInfo("gpt-test", "openai", 54_000)  # threshold 5,400: 6 tools 5,880, 5 tools 4,900
    session = AgentSession()
    first = build_agent_params(registry, SCOPE, model, session=session)
    assert len(first.exposition.deferred) == 6
    registry.deregister("mcp__s1__t5")
    later = build_agent_params(registry, SCOPE, model, session=session)
    assert [t["function"]["name"] for t in later.tools] == META
    fresh = build_agent_params(registry, SCOPE, model)
    assert fresh.exposition.deferred == ()


@pytest.mark.anyio
async def test_a_failing_repair_hook_or_formatter_becomes_an_error_result() -> None:
    async def broken_repair(entry: Any, call: ToolCall, error: ToolError) -> dict[str, Any] | None:
        raise RuntimeError("model client down")

    def broken_format(result: Any) -> ToolOutput:
        raise ValueError("cannot render")

    async def run(args: dict[str, Any], ctx: ToolContext) -> str:
        return "raw"

    odd = ToolEntry("odd", "web", Tool("Odd.", execute=run, to_model_output=broken_format))
    registry = big_registry([])
    registry.register(odd)
    params = build_agent_params(registry, SCOPE, GPT, repair=broken_repair)
    bad = await params.dispatcher.call(ToolCall("c1", "web_search", {"query": 1}))
    assert bad.as_text().startswith('Invalid params for "web_search"')
    unformatted = await params.dispatcher.call(ToolCall("c2", "odd", {}))
    assert unformatted.is_error is True
    assert unformatted.as_text() == (
        "Tool odd ran but its result could not be formatted: cannot render"
    )


@pytest.mark.anyio
async def test_openai_strict_nulls_for_optional_parameters_are_dropped_before_validation() -> None:
    calls: Calls = []
    strict = Tool(
        "Search strictly.",
        {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"],
        },
        execute=recorder(calls),
        strict=True,
    )
    registry = ToolRegistry([ToolEntry("strict_search", "web", strict, defer="never")])
    params = build_agent_params(registry, SCOPE, GPT)
    [tool] = params.tools
    assert tool["function"]["strict"] is True
    assert tool["function"]["parameters"]["required"] == ["query", "limit"]
    out = await params.dispatcher.call(
        ToolCall("c1", "strict_search", {"query": "q", "limit": None})
    )
    assert out.as_text() == "ok"
    assert calls == [("c1", {"query": "q"}, "c1")]


@pytest.mark.anyio
async def test_direct_calls_get_schema_defaults_for_missing_parameters_only() -> None:
    calls: Calls = []
    params = build_agent_params(big_registry(calls), SCOPE, GPT)
    message = assistant(
        chat_call("c1", "web_search", {"query": "a"}),
        chat_call("c2", "web_search", {"query": "b", "limit": 2}),
    )
    results = await params.dispatcher.respond(message)
    assert [r["content"] for r in results] == ["found", "found"]
    assert sorted(calls) == [
        ("c1", {"query": "a", "limit": 10}, "c1"),
        ("c2", {"query": "b", "limit": 2}, "c2"),
    ]

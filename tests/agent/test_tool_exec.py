"""tool_exec through ``build_agent_params``: off unless asked, injected beside the meta-tools,
and every call from code on the one call path (allowed set, approval, audit)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pegboard.agent.params import AgentSession, build_agent_params
from pegboard.calls import CallRecord
from pegboard.calls.approval import ApprovalRequest, CallbackApprovalHandler, Decision
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import AssistantSettings, ModelInfo, ToolApplyScope
from pegboard.deferral.defer import meta_tools_overhead_tokens
from pegboard.deferral.prompt import INSPECT_USAGE_EXEC
from pegboard.deferral.tool_exec import ExecSettings
from pegboard.formats import ToolCall
from pegboard.sandbox import ExecLimits
from pegboard.sandbox.tool import EXEC_DESCRIPTION, EXEC_PROMPT_LINE
from tests.agent.test_params import big_registry
from tests.deferral.factories import Calls, entry, recorder

pytestmark = pytest.mark.anyio

SCOPE = ToolApplyScope()
GPT = ModelInfo("gpt-test", "openai", 32_000)
CLAUDE = ModelInfo("claude-test", "anthropic", 32_000)
META = ["tool_search", "tool_inspect", "tool_invoke"]


def registry_of(calls: Calls) -> ToolRegistry:
    """The deferred pool, inline and gated tools of test_params, plus one the scope may hide."""
    registry = big_registry(calls)
    registry.register(entry("secret_tool", defer="never", execute=recorder(calls, "secret")))
    return registry


def without_secret() -> ToolApplyScope:
    return ToolApplyScope(assistant=AssistantSettings(disabled_tools=frozenset({"secret_tool"})))


def names(params: Any) -> list[str]:
    return [t["function"]["name"] for t in params.tools]


async def run_code(params: Any, code: str) -> tuple[str, dict[str, Any]]:
    out = await params.dispatcher.call(ToolCall("c1", "tool_exec", {"code": code}))
    return out.as_text(), out.structured


def test_tool_exec_is_off_unless_asked_for() -> None:
    params = build_agent_params(registry_of([]), SCOPE, GPT)
    assert names(params) == ["delete_file", "secret_tool", "web_search", *META]
    assert "tool_exec" not in params.system_prompt


def test_when_on_tool_exec_is_injected_beside_the_meta_tools_with_its_prompt_line() -> None:
    params = build_agent_params(registry_of([]), SCOPE, GPT, tool_exec=True)
    assert names(params) == ["delete_file", "secret_tool", "web_search", *META, "tool_exec"]
    definition = params.tools[-1]["function"]
    assert definition["description"] == EXEC_DESCRIPTION
    assert f"- {EXEC_PROMPT_LINE}" in params.system_prompt.splitlines()
    assert f"- {INSPECT_USAGE_EXEC}" in params.system_prompt.splitlines()


def test_tool_exec_is_not_offered_when_nothing_is_deferred() -> None:
    registry = ToolRegistry([entry("web_search", execute=recorder([]))])
    params = build_agent_params(registry, SCOPE, GPT, tool_exec=True)
    assert names(params) == ["web_search"]
    assert params.system_prompt == ""


def test_tool_exec_is_not_offered_with_anthropic_native_deferred_loading() -> None:
    params = build_agent_params(registry_of([]), SCOPE, CLAUDE, native_defer=True, tool_exec=True)
    assert "tool_exec" not in [t["name"] for t in params.tools]
    assert "tool_exec" not in params.system_prompt


def test_the_params_are_cached_per_tool_exec_setting() -> None:
    session, registry = AgentSession(), registry_of([])
    on = build_agent_params(registry, SCOPE, GPT, session=session, tool_exec=True)
    assert build_agent_params(registry, SCOPE, GPT, session=session, tool_exec=True) is on
    off = build_agent_params(registry, SCOPE, GPT, session=session)
    assert "tool_exec" not in names(off)


async def test_tool_inspect_shows_the_python_signature_code_calls_when_tool_exec_is_on() -> None:
    registry = registry_of([])
    plain = build_agent_params(registry, SCOPE, GPT)
    coded = build_agent_params(registry, SCOPE, GPT, tool_exec=True)
    call = ToolCall("i1", "tool_inspect", {"name": "mcp__s1__t0"})
    jsdoc = (await plain.dispatcher.call(call)).as_text()
    python = (await coded.dispatcher.call(call)).as_text()
    assert jsdoc.startswith("/**\n * Does one thing.")
    assert python.startswith("async def mcp__s1__t0(*, field_0: str = None, field_1: str")
    assert python.splitlines()[1] == '    """Does one thing.'


async def test_code_calls_deferred_and_inline_tools_in_parallel_each_audited_once() -> None:
    calls: Calls = []
    records: list[CallRecord] = []
    params = build_agent_params(
        registry_of(calls), SCOPE, GPT, tool_exec=True, audit=records.append
    )
    code = (
        "a, b, c = await gather(mcp__s1__t1(field_0='x'), mcp__s1__t2(), web_search(query='q'))\n"
        "' + '.join([a, b, c])"
    )
    text, structured = await run_code(params, code)
    assert text == '"t1 done + t2 done + found"\ntool calls: 3'
    assert sorted((cid, args) for cid, args, _ in calls) == [
        ("c1::mcp__s1__t1#1", {"field_0": "x"}),
        ("c1::mcp__s1__t2#2", {}),
        ("c1::web_search#3", {"query": "q", "limit": 10}),
    ]
    assert sorted(c["name"] for c in structured["calls"]) == [
        "mcp__s1__t1",
        "mcp__s1__t2",
        "web_search",
    ]
    inner = sorted((r.via, r.tool, r.call_id, r.outcome) for r in records if r.via == "tool_exec")
    assert inner == [
        ("tool_exec", "mcp__s1__t1", "c1::mcp__s1__t1#1", "ok"),
        ("tool_exec", "mcp__s1__t2", "c1::mcp__s1__t2#2", "ok"),
        ("tool_exec", "web_search", "c1::web_search#3", "ok"),
    ]
    assert [(r.via, r.tool) for r in records if r.via != "tool_exec"] == [("direct", "tool_exec")]


async def test_a_gated_tool_called_from_code_is_refused_without_asking_and_never_runs() -> None:
    calls: Calls = []
    records: list[CallRecord] = []
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return "allow_once"

    params = build_agent_params(
        registry_of(calls),
        SCOPE,
        GPT,
        tool_exec=True,
        audit=records.append,
        approval_handler=CallbackApprovalHandler(approve),
    )
    code = (
        "try:\n"
        "    await delete_file(query='/etc')\n"
        "    r = 'ran'\n"
        "except PermissionError as e:\n"
        "    r = 'refused: ' + str(e)\n"
        "r"
    )
    text, _ = await run_code(params, code)
    assert json.loads(text.splitlines()[0]) == (
        "refused: Tool delete_file requires user approval; call it directly instead of via "
        "tool_exec, so the user can approve it."
    )
    assert calls == []
    assert asked == []
    inner = [(r.tool, r.approval, r.outcome) for r in records if r.via == "tool_exec"]
    assert inner == [("delete_file", "required_no_handler", "ApprovalRequired")]


async def test_code_sees_only_the_requests_tools_and_no_meta_tool_but_tool_search() -> None:
    calls: Calls = []
    params = build_agent_params(registry_of(calls), without_secret(), GPT, tool_exec=True)
    for name in ("secret_tool", "tool_invoke", "tool_inspect", "tool_exec"):
        text, _ = await run_code(params, f"await {name}(name='x')")
        assert text == f"tool_exec failed: line 1: NameError: name '{name}' is not defined"
    assert calls == []


async def test_code_can_search_the_deferred_pool_and_read_the_structured_hits() -> None:
    params = build_agent_params(registry_of([]), SCOPE, GPT, tool_exec=True)
    code = (
        "found = await tool_search(namespace='mcp:s1', limit=2)\n"
        "[t['name'] for t in found['tools']]"
    )
    text, structured = await run_code(params, code)
    assert structured["result"] == ["mcp__s1__t0", "mcp__s1__t1"]
    assert text == '["mcp__s1__t0", "mcp__s1__t1"]\ntool calls: 1'


async def test_the_limits_of_the_settings_apply_to_every_run() -> None:
    calls: Calls = []
    settings = ExecSettings(limits=ExecLimits(max_tool_calls=2))
    params = build_agent_params(registry_of(calls), SCOPE, GPT, tool_exec=settings)
    text, _ = await run_code(params, "for _ in range(5):\n    await web_search(query='q')")
    assert text.startswith("tool_exec failed: tool-call limit of 2 calls exceeded")
    assert len(calls) == 2


def test_the_defer_decision_counts_tool_exec_in_the_measured_overhead() -> None:
    registry = registry_of([])
    auto = [e for e in registry.get_all() if e.name.startswith("mcp__s1__")]
    off = build_agent_params(registry, SCOPE, GPT).exposition
    on = build_agent_params(registry, SCOPE, GPT, tool_exec=True).exposition
    assert off is not None
    assert on is not None
    assert off.decision is not None
    assert on.decision is not None
    assert off.decision.overhead == meta_tools_overhead_tokens(auto)
    assert on.decision.overhead == meta_tools_overhead_tokens(auto, tool_exec=True)
    assert on.decision.overhead > off.decision.overhead

"""A tool gated only by its destructive hint is deferred, and still asked for when called.

The gateway's side (elicitation, the reference servers) is in
``tests/gateway/test_reference_servers.py``; this is the library dispatcher's.
"""

from __future__ import annotations

import pytest

from pegboard import (
    AgentSession,
    ApprovalRequest,
    CallbackApprovalHandler,
    Decision,
    ModelInfo,
    ToolApplyScope,
    ToolCall,
    ToolRegistry,
    build_agent_params,
)
from tests.deferral.factories import Calls, entry, heavy, recorder

pytestmark = pytest.mark.anyio

GPT = ModelInfo("gpt-test", "openai", 32_000)
DESTRUCTIVE = {"destructiveHint": True}


def registry(calls: Calls) -> ToolRegistry:
    return ToolRegistry(
        [
            *(heavy(f"mcp__s1__t{i}", execute=recorder(calls)) for i in range(5)),
            heavy(
                "mcp__s1__drop",
                needs_approval=True,
                annotations=DESTRUCTIVE,
                execute=recorder(calls, "dropped"),
            ),
            entry(
                "mcp__s1__reset",
                defer="never",  # how force_prompt_tools are registered
                needs_approval=True,
                annotations=DESTRUCTIVE,
                execute=recorder(calls, "reset"),
            ),
        ]
    )


def names_of(tools: list[dict[str, object]]) -> list[str]:
    return [t["function"]["name"] for t in tools]  # type: ignore[index]


async def test_a_deferred_destructive_tool_is_asked_for_directly_and_through_tool_invoke() -> None:
    calls: Calls = []
    asked: list[ApprovalRequest] = []
    answers: list[Decision] = ["deny", "allow_once"]

    def decide(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return answers.pop(0)

    session = AgentSession(approval_handler=CallbackApprovalHandler(decide))
    params = build_agent_params(registry(calls), ToolApplyScope(), GPT, session=session)

    assert names_of(params.tools) == [
        "mcp__s1__reset",
        "tool_search",
        "tool_inspect",
        "tool_invoke",
    ]
    assert params.exposition is not None
    assert "mcp__s1__drop" in {e.name for e in params.exposition.deferred}

    invoked = await params.dispatcher.call(
        ToolCall("c1", "tool_invoke", {"name": "mcp__s1__drop", "params": {"query": "all"}})
    )
    assert invoked.is_error
    assert invoked.as_text().startswith("The user denied the call to mcp__s1__drop")
    assert calls == []

    direct = await params.dispatcher.call(ToolCall("c2", "mcp__s1__drop", {"query": "all"}))
    assert direct.as_text() == "dropped"
    assert [(r.tool_name, dict(r.arguments), r.via) for r in asked] == [
        ("mcp__s1__drop", {"query": "all"}, "tool_invoke"),
        ("mcp__s1__drop", {"query": "all"}, "direct"),
    ]
    assert calls == [("c2", {"query": "all"}, "c2")]


async def test_without_a_handler_a_deferred_destructive_tool_is_refused_on_every_path() -> None:
    calls: Calls = []
    params = build_agent_params(registry(calls), ToolApplyScope(), GPT)
    invoked = await params.dispatcher.call(
        ToolCall("c1", "tool_invoke", {"name": "mcp__s1__drop", "params": {"query": "all"}})
    )
    direct = await params.dispatcher.call(ToolCall("c2", "mcp__s1__drop", {"query": "all"}))
    assert invoked.is_error
    assert direct.is_error
    assert "requires user approval" in direct.as_text()
    assert calls == []

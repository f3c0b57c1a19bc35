"""Repair of a deferred tool's arguments when the model calls it through ``tool_invoke``."""

from __future__ import annotations

from typing import Any

import pytest

from pegboard import (
    ModelInfo,
    Tool,
    ToolApplyScope,
    ToolCall,
    ToolEntry,
    ToolOutput,
    ToolRegistry,
    build_agent_params,
)
from pegboard.chat.loop import AgentLoop
from pegboard.llm import create_repair
from tests.llm.clients import KINDS, Kind, client_for
from tests.model_server import Call, ScriptedModel, Turn

pytestmark = pytest.mark.anyio


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def registry() -> ToolRegistry:
    # defer="always": deferred behind the meta-tools whatever the window.
    return ToolRegistry([ToolEntry("add", "math", Tool.from_function(add), defer="always")])


class Seen:
    def __init__(self) -> None:
        self.results: list[tuple[str, dict[str, Any], str, bool]] = []

    def on_text(self, delta: str) -> None:
        pass

    def on_tool_result(
        self, call: ToolCall, output: ToolOutput, *, repaired: bool = False, from_text: bool = False
    ) -> None:
        self.results.append((call.name, call.arguments, output.as_text(), repaired))


@pytest.mark.parametrize("kind", KINDS)
async def test_a_broken_tool_invoke_call_is_repaired_by_the_model_and_shown_repaired(
    kind: Kind, model_server: ScriptedModel
) -> None:
    client = client_for(kind, model_server, max_retries=0)
    loop = AgentLoop(client, registry(), ToolApplyScope)
    seen = Seen()
    broken = {"name": "add", "params": {"a": 1, "b": "two"}}
    model_server.add(
        Turn(tool_calls=[Call("tool_invoke", broken, id="c1")]),
        Turn(structured={"a": 1, "b": 2}, match=lambda r: r.structured),
        Turn(text="3."),
    )

    result = await loop.run_turn("1 plus 2?", seen)

    assert result.answer == "3."
    assert seen.results == [("tool_invoke", {"name": "add", "params": {"a": 1, "b": 2}}, "3", True)]
    prompt = model_server.requests[1].messages[-1]["content"]
    assert prompt.startswith("Tool: add\nDescription: Add two integers.\n")  # the inner tool
    assert '"b": "two"' in prompt
    stats = loop.repairer.stats
    assert (stats.attempts, stats.model_calls, stats.model_fixes) == (1, 1, 1)
    # The model's own call stays in the conversation as it was made; its result is the fix's.
    assert result.messages[1].tool_calls[0].arguments == broken
    assert result.messages[2].tool_output.as_text() == "3"
    assert model_server.problems == []


async def test_the_dispatcher_repairs_the_inner_call_of_tool_invoke_for_free() -> None:
    repair = create_repair(None)
    params = build_agent_params(
        registry(), ToolApplyScope(), ModelInfo("m", "openai", None), repair=repair
    )
    call = ToolCall("c1", "tool_invoke", {"name": "add", "params": {"arguments": {"a": 1, "b": 2}}})

    done = await params.dispatcher.dispatch(call)

    assert done.output.as_text() == "3"
    assert done.repaired is True
    assert done.call == ToolCall("c1", "tool_invoke", {"name": "add", "params": {"a": 1, "b": 2}})
    assert (repair.stats.attempts, repair.stats.free_fixes) == (1, 1)


async def test_an_unrepairable_tool_invoke_call_gets_the_inner_signature() -> None:
    repair = create_repair(None)
    params = build_agent_params(
        registry(), ToolApplyScope(), ModelInfo("m", "openai", None), repair=repair
    )
    call = ToolCall("c1", "tool_invoke", {"name": "add", "params": {"a": "one"}})

    done = await params.dispatcher.dispatch(call)

    assert done.repaired is False
    assert done.call == call
    assert done.output.is_error
    assert "function add(params)" in done.output.as_text()
    assert repair.stats.attempts == 1

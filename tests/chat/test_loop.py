"""The agent loop of ``pegboard chat`` against the scripted model server (both wire formats)."""

from __future__ import annotations

import anyio
import pytest

from pegboard.chat.loop import AgentLoop
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ToolApplyScope
from pegboard.core.tool import Tool
from pegboard.errors import ModelError
from pegboard.formats.calls import ToolCall
from tests.llm.clients import KINDS, Kind, client_for
from tests.model_server import Call, ScriptedModel, Turn

pytestmark = pytest.mark.anyio


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _loop(kind: Kind, server: ScriptedModel, **kw: object) -> AgentLoop:
    registry = ToolRegistry([ToolEntry("add", "math", Tool.from_function(add))])
    client = client_for(kind, server, max_retries=0)
    return AgentLoop(client, registry, ToolApplyScope, **kw)  # type: ignore[arg-type]


class Seen:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.results: list[tuple[str, str]] = []

    def on_text(self, delta: str) -> None:
        self.text.append(delta)

    def on_tool_result(self, call: ToolCall, output: ToolOutput) -> None:
        self.results.append((call.name, output.as_text()))


@pytest.mark.parametrize("kind", KINDS)
async def test_a_turn_runs_tool_rounds_until_the_model_answers(
    kind: Kind, model_server: ScriptedModel
) -> None:
    loop = _loop(kind, model_server)
    seen = Seen()
    model_server.add(
        Turn(tool_calls=[Call("add", {"a": 1, "b": 2}, id="t1"), Call("add", '{"a": 3, "b": 4}')]),
        Turn(text="3 and 7."),
    )

    result = await loop.run_turn("sums?", seen)

    assert (result.answer, result.rounds, result.capped) == ("3 and 7.", 2, False)
    assert "".join(seen.text) == "3 and 7."
    assert sorted(seen.results) == [("add", "3"), ("add", "7")]
    assert [m.role for m in loop.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert model_server.requests[0].tool_names == ["add"]
    assert model_server.problems == []


async def test_the_round_cap_stops_a_model_that_never_answers(
    model_server: ScriptedModel,
) -> None:
    loop = _loop("openai", model_server, max_rounds=2)
    model_server.add(
        Turn(tool_calls=[Call("add", {"a": 1, "b": 1})]),
        Turn(tool_calls=[Call("add", {"a": 2, "b": 2})]),
    )

    result = await loop.run_turn("loop forever")

    assert (result.answer, result.rounds, result.capped) == ("", 2, True)
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert len(model_server.requests) == 2


async def test_a_failed_model_call_leaves_the_conversation_unchanged(
    model_server: ScriptedModel,
) -> None:
    loop = _loop("openai", model_server)
    model_server.add(
        Turn(text="first"),
        Turn(tool_calls=[Call("add", {"a": 1, "b": 1})]),
        Turn(status=500, error="boom"),
        Turn(text="third"),
    )
    await loop.run_turn("one")

    with pytest.raises(ModelError):
        await loop.run_turn("two")
    third = await loop.run_turn("three")

    assert third.answer == "third"
    sent = [(m["role"], m.get("content")) for m in model_server.requests[3].messages[1:]]
    assert sent == [
        ("user", "one"),
        ("assistant", "first"),
        ("user", "three"),
    ]


async def test_a_cancelled_turn_leaves_the_conversation_unchanged(
    model_server: ScriptedModel,
) -> None:
    loop = _loop("openai", model_server)
    model_server.add(Turn(text="first"), Turn(hang=True))
    await loop.run_turn("one")

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(loop.run_turn, "two")
            # the server records requests on its own thread: there is no event to wait on
            while len(model_server.requests) < 2:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            scope.cancel()

    assert scope.cancelled_caught
    assert [m.content for m in loop.messages] == ["one", "first"]


async def test_invalid_arguments_are_repaired_once_per_call_and_counted(
    model_server: ScriptedModel,
) -> None:
    loop = _loop("openai", model_server)
    model_server.add(
        Turn(tool_calls=[Call("add", '{"a": 1, "b": 2,}', id="t1")]),  # a free fix
        Turn(tool_calls=[Call("add", {"a": 1, "b": "two"}, id="t2")]),
        Turn(structured={"a": 1, "b": 2}, match=lambda r: r.structured),
        Turn(text="done"),
    )

    result = await loop.run_turn("add")

    assert result.answer == "done"
    assert [m.tool_output.as_text() for m in result.messages if m.role == "tool"] == ["3", "3"]
    stats = loop.repairer.stats
    assert (stats.attempts, stats.free_fixes, stats.model_fixes) == (2, 1, 1)
    assert model_server.problems == []

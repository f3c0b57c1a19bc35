"""Small local models that write their tool calls as text, against the scripted model server
in both wire shapes (OpenAI Chat Completions, Anthropic Messages)."""

from __future__ import annotations

from typing import Any

import pytest

from pegboard import (
    ApprovalRequest,
    CallbackApprovalHandler,
    Decision,
    Tool,
    ToolApplyScope,
    ToolCall,
    ToolEntry,
    ToolOutput,
    ToolRegistry,
)
from pegboard.chat.loop import AgentLoop
from tests.llm.clients import KINDS, Kind, client_for
from tests.model_server import ScriptedModel, Turn

pytestmark = pytest.mark.anyio


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def wipe(path: str) -> str:
    """Delete everything under a path."""
    return f"wiped {path}"


class Seen:
    def __init__(self) -> None:
        self.results: list[tuple[str, dict[str, Any], str, bool, bool]] = []

    def on_text(self, delta: str) -> None:
        pass

    def on_tool_result(
        self, call: ToolCall, output: ToolOutput, *, repaired: bool = False, from_text: bool = False
    ) -> None:
        self.results.append((call.name, call.arguments, output.as_text(), repaired, from_text))


def _loop(kind: Kind, server: ScriptedModel, **kw: Any) -> AgentLoop:
    registry = ToolRegistry(
        [
            ToolEntry("add", "math", Tool.from_function(add)),
            ToolEntry("wipe", "files", Tool.from_function(wipe, needs_approval=True)),
        ]
    )
    client = client_for(kind, server, max_retries=0)
    return AgentLoop(client, registry, ToolApplyScope, **kw)


CALL = '{"name": "add", "arguments": {"a": 1, "b": 2}}'
FORMS = {
    "fenced": f"```json\n{CALL}\n```",
    "bare": CALL,
    "tags": f"<tool_call>\n{CALL}\n</tool_call>",
    "prose and a call": f"Let me add those.\n```json\n{CALL}\n```",
}


def _sent_back(request: Any, kind: Kind) -> tuple[list[tuple[str, str]], list[str]]:
    """The tool calls of the assistant message and the ids answered, as the server got them."""
    messages = request.messages
    if kind == "openai":
        (assistant,) = [m for m in messages if m["role"] == "assistant"]
        calls = [(c["id"], c["function"]["name"]) for c in assistant["tool_calls"]]
        answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
        return calls, answered
    (assistant,) = [m for m in messages if m["role"] == "assistant"]
    calls = [(b["id"], b["name"]) for b in assistant["content"] if b["type"] == "tool_use"]
    answered = [
        b["tool_use_id"]
        for m in messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    return calls, answered


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("kind", KINDS)
async def test_a_call_written_as_text_runs_like_a_native_one(
    kind: Kind, form: str, model_server: ScriptedModel
) -> None:
    loop = _loop(kind, model_server)
    seen = Seen()
    model_server.add(Turn(text=FORMS[form]), Turn(text="1 plus 2 is 3."))

    result = await loop.run_turn("1 plus 2?", seen)

    assert result.answer == "1 plus 2 is 3."
    assert seen.results == [("add", {"a": 1, "b": 2}, "3", False, True)]
    assistant = result.messages[1]
    assert assistant.content == ("Let me add those." if form == "prose and a call" else "")
    assert [(c.name, c.arguments) for c in assistant.tool_calls] == [("add", {"a": 1, "b": 2})]
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    # The next request carries it as a native call and its result, so the model sees an
    # ordinary tool exchange.
    calls, answered = _sent_back(model_server.requests[1], kind)
    assert calls == [(assistant.tool_calls[0].id, "add")]
    assert answered == [assistant.tool_calls[0].id]
    stats = loop.repairer.stats
    assert (stats.attempts, stats.text_calls, stats.successes) == (1, 1, 1)
    assert model_server.problems == []


@pytest.mark.parametrize("kind", KINDS)
async def test_several_calls_in_one_message_all_run_in_order(
    kind: Kind, model_server: ScriptedModel
) -> None:
    loop = _loop(kind, model_server)
    seen = Seen()
    text = (
        "I need two sums.\n"
        '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>\n'
        '<tool_call>{"name": "add", "arguments": {"a": 3, "b": 4}}</tool_call>'
    )
    model_server.add(Turn(text=text), Turn(text="3 and 7."))

    result = await loop.run_turn("sums?", seen)

    assert result.answer == "3 and 7."
    assert sorted((r[2], r[4]) for r in seen.results) == [("3", True), ("7", True)]
    tool_messages = [m for m in result.messages if m.role == "tool"]
    assert [m.tool_output.as_text() for m in tool_messages] == ["3", "7"]
    ids = [c.id for c in result.messages[1].tool_calls]
    assert len(set(ids)) == 2
    assert [m.tool_call_id for m in tool_messages] == ids
    assert loop.repairer.stats.text_calls == 2


async def test_broken_arguments_in_text_are_repaired_and_a_gated_call_asks_first(
    model_server: ScriptedModel,
) -> None:
    asked: list[ApprovalRequest] = []

    def decide(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return "allow_once"

    loop = _loop("openai", model_server, approval_handler=CallbackApprovalHandler(decide))
    seen = Seen()
    text = (
        '{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2,}"}\n'  # a trailing comma
        '{"name": "wipe", "arguments": {"path": "/tmp/x"}}'
    )
    model_server.add(Turn(text=text), Turn(text="done"))

    await loop.run_turn("go", seen)

    assert sorted(seen.results) == [
        ("add", {"a": 1, "b": 2}, "3", True, True),
        ("wipe", {"path": "/tmp/x"}, "wiped /tmp/x", False, True),
    ]
    assert [(r.tool_name, dict(r.arguments)) for r in asked] == [("wipe", {"path": "/tmp/x"})]
    stats = loop.repairer.stats
    assert (stats.attempts, stats.text_calls, stats.free_fixes) == (3, 2, 1)


@pytest.mark.parametrize("kind", KINDS)
async def test_json_naming_no_offered_tool_stays_the_answer(
    kind: Kind, model_server: ScriptedModel
) -> None:
    loop = _loop(kind, model_server)
    text = 'Call it like this: {"name": "rm_rf", "arguments": {"path": "/"}}'
    model_server.add(Turn(text=text))

    result = await loop.run_turn("how?")

    assert result.answer == text
    assert len(model_server.requests) == 1
    assert loop.repairer.stats.text_calls == 0


async def test_text_calls_off_leaves_the_text_as_the_answer(model_server: ScriptedModel) -> None:
    loop = _loop("openai", model_server, text_tool_calls=False)
    model_server.add(Turn(text=FORMS["fenced"]))

    result = await loop.run_turn("1 plus 2?")

    assert result.answer == FORMS["fenced"]
    assert [m.role for m in result.messages] == ["user", "assistant"]
    assert len(model_server.requests) == 1

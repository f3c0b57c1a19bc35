import pytest

from pegboard.agent import build_agent_params
from pegboard.core.output import ToolOutput
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ModelInfo, ToolApplyScope
from pegboard.errors import ModelError
from pegboard.formats import ToolCall, to_anthropic_tools, to_chat_tools
from pegboard.llm import Completed, Message, TextDelta, ToolCallStarted, Usage
from tests.deferral.factories import heavy
from tests.llm.clients import ADD, KINDS, Kind, client_for
from tests.model_server import Call, ScriptedModel, Turn

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("kind", KINDS)
async def test_chat_returns_the_text_and_usage(kind: Kind, model_server: ScriptedModel) -> None:
    model_server.add(Turn(text="Hello there.", usage=(30, 4)))
    client = client_for(kind, model_server)

    answer = await client.chat([Message.system("Be brief."), Message.user("Hi")])

    assert answer.text == "Hello there."
    assert answer.tool_calls == ()
    assert answer.usage == Usage(30, 4)
    assert not model_server.requests[0].structured
    body = model_server.requests[0].body
    if kind == "openai":
        assert answer.stop_reason == "stop"
        assert body == {
            "model": "m1",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hi"},
            ],
        }
    else:
        assert answer.stop_reason == "end_turn"
        assert body == {
            "model": "m1",
            "max_tokens": 4096,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": "Hi"}],
        }
    await client.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_chat_sends_the_tools_and_parses_the_tool_calls(
    kind: Kind, model_server: ScriptedModel
) -> None:
    model_server.add(Turn(text="Adding.", tool_calls=[Call("add", {"a": 1, "b": 2}, id="c1")]))
    client = client_for(kind, model_server)

    answer = await client.chat([Message.user("1+2?")], tools=[ADD])

    assert answer.text == "Adding."
    assert [(c.id, c.name, c.arguments, c.parse_error) for c in answer.tool_calls] == [
        ("c1", "add", {"a": 1, "b": 2}, None)
    ]
    expected = to_chat_tools([ADD]) if kind == "openai" else to_anthropic_tools([ADD])
    assert model_server.requests[0].tools == expected


@pytest.mark.parametrize("kind", KINDS)
async def test_a_stream_yields_text_pieces_then_tool_calls_then_the_whole_answer(
    kind: Kind, model_server: ScriptedModel
) -> None:
    arguments = {"a": 40, "b": 2, "note": "a long value so the JSON arrives in many pieces"}
    model_server.add(
        Turn(
            text="Let me add those numbers.",
            tool_calls=[Call("add", arguments, id="c1"), Call("add", {"a": 0, "b": 0}, id="c2")],
        )
    )
    client = client_for(kind, model_server)

    events = [e async for e in client.stream([Message.user("sum")], tools=[ADD])]

    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == 5
    assert "".join(deltas) == "Let me add those numbers."
    assert [e for e in events if isinstance(e, ToolCallStarted)] == [
        ToolCallStarted("c1", "add"),
        ToolCallStarted("c2", "add"),
    ]
    done = events[-1]
    assert isinstance(done, Completed)
    assert done.response.text == "Let me add those numbers."
    assert [(c.id, c.arguments) for c in done.response.tool_calls] == [
        ("c1", arguments),
        ("c2", {"a": 0, "b": 0}),
    ]
    assert done.response.stop_reason == ("tool_calls" if kind == "openai" else "tool_use")
    assert done.response.usage == Usage(12, 7)
    assert model_server.requests[0].stream is True


@pytest.mark.parametrize("kind", KINDS)
async def test_a_streamed_call_with_broken_arguments_keeps_them_raw_with_a_parse_error(
    kind: Kind, model_server: ScriptedModel
) -> None:
    model_server.add(Turn(tool_calls=[Call("add", '{"a": 1, "b": 2,}', id="c1")]))
    client = client_for(kind, model_server)

    events = [e async for e in client.stream([Message.user("sum")], tools=[ADD])]

    done = events[-1]
    assert isinstance(done, Completed)
    (call,) = done.response.tool_calls
    assert call.raw_arguments == '{"a": 1, "b": 2,}'
    assert call.arguments == {}
    assert call.parse_error is not None
    assert call.parse_error.startswith("arguments are not valid JSON")


async def test_openai_history_carries_tool_calls_and_results_in_chat_format(
    model_server: ScriptedModel,
) -> None:
    model_server.add(Turn(text="3"))
    client = client_for("openai", model_server)
    history = [
        Message.user("1+2?"),
        Message.assistant("", [ToolCall("c1", "add", {"a": 1, "b": 2}, '{"a":1,"b":2}')]),
        Message.tool("c1", ToolOutput.text("3")),
    ]

    await client.chat(history, tools=[ADD])

    assert model_server.requests[0].messages == [
        {"role": "user", "content": "1+2?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":1,"b":2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "3"},
    ]


async def test_anthropic_history_groups_the_results_of_a_turn_in_one_user_message(
    model_server: ScriptedModel,
) -> None:
    model_server.add(Turn(text="3 and 0"))
    client = client_for("anthropic", model_server)
    history = [
        Message.system("Use tools."),
        Message.user("1+2 and 0+0?"),
        Message.assistant(
            "Two sums.", [ToolCall("c1", "add", {"a": 1, "b": 2}), ToolCall("c2", "add", {})]
        ),
        Message.tool("c1", ToolOutput.text("3")),
        Message.tool("c2", ToolOutput.error("b: required")),
    ]

    await client.chat(history, tools=[ADD])

    body = model_server.requests[0].body
    assert body["system"] == "Use tools."
    assert body["messages"] == [
        {"role": "user", "content": "1+2 and 0+0?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Two sums."},
                {"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 1, "b": 2}},
                {"type": "tool_use", "id": "c2", "name": "add", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "content": [{"type": "text", "text": "3"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "c2",
                    "content": [{"type": "text", "text": "b: required"}],
                    "is_error": True,
                },
            ],
        },
    ]


async def test_openai_structured_output_asks_for_a_json_schema_response(
    model_server: ScriptedModel,
) -> None:
    model_server.add(Turn(structured={"a": 1, "b": 2}))
    client = client_for("openai", model_server)
    schema = ADD.tool.input_schema

    value = await client.structured([Message.user("fix")], schema=schema, name="add")

    assert value == {"a": 1, "b": 2}
    assert model_server.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "add", "schema": schema, "strict": False},
    }


async def test_anthropic_structured_output_forces_one_tool_with_the_schema(
    model_server: ScriptedModel,
) -> None:
    model_server.add(Turn(structured={"a": 1, "b": 2}))
    client = client_for("anthropic", model_server)
    schema = ADD.tool.input_schema

    value = await client.structured([Message.user("fix")], schema=schema, name="add")

    assert value == {"a": 1, "b": 2}
    body = model_server.requests[0].body
    assert body["tool_choice"] == {"type": "tool", "name": "add"}
    assert body["tools"] == [
        {"name": "add", "description": "Return the answer.", "input_schema": schema}
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_model_info_carries_the_configured_context_window(
    kind: Kind, model_server: ScriptedModel
) -> None:
    client = client_for(kind, model_server, context_window=32_768)

    assert client.model_info() == ModelInfo("m1", kind, 32_768)


def test_the_configured_context_window_reaches_deferral_through_model_info(
    model_server: ScriptedModel,
) -> None:
    registry = ToolRegistry([heavy(f"mcp__s1__t{i}") for i in range(5)])
    small = client_for("openai", model_server, context_window=8_000).model_info()
    large = client_for("openai", model_server, context_window=2_000_000).model_info()

    deferred = build_agent_params(registry, ToolApplyScope(), small)
    inline = build_agent_params(registry, ToolApplyScope(), large)

    assert [t["function"]["name"] for t in deferred.tools] == [
        "tool_search",
        "tool_inspect",
        "tool_invoke",
    ]
    assert [t["function"]["name"] for t in inline.tools] == [f"mcp__s1__t{i}" for i in range(5)]


async def test_openai_structured_output_accepts_json_fenced_as_markdown(
    model_server: ScriptedModel,
) -> None:
    model_server.add(Turn(text='```json\n{"a": 1, "b": 2}\n```'), Turn(text="no JSON here"))
    client = client_for("openai", model_server)
    schema = ADD.tool.input_schema

    value = await client.structured([Message.user("fix")], schema=schema, name="add")
    with pytest.raises(ModelError) as caught:
        await client.structured([Message.user("fix")], schema=schema, name="add")

    assert value == {"a": 1, "b": 2}
    assert str(caught.value) == (
        f"Model endpoint {model_server.url} answered a structured-output request with text "
        "that is not JSON (Expecting value)."
    )

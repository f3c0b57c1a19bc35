"""The scripted model server itself, through the official SDKs (the Responses API, which no
pegboard client speaks yet, is here for the OpenAI Agents SDK's integration tests)."""

import json

import openai
import pytest

from pegboard.formats import parse_responses_tool_calls, to_responses_tools
from tests.llm.clients import ADD
from tests.model_server import Call, ScriptedModel, Turn

pytestmark = pytest.mark.anyio


async def test_the_responses_api_answers_text_and_function_calls(
    model_server: ScriptedModel,
) -> None:
    model_server.add(Turn(text="Adding.", tool_calls=[Call("add", {"a": 1, "b": 2}, id="c1")]))
    client = openai.AsyncOpenAI(base_url=model_server.url, api_key="k")

    response = await client.responses.create(
        model="m1", input="1+2?", tools=to_responses_tools([ADD])
    )

    assert response.output_text == "Adding."
    assert [(c.id, c.name, c.arguments) for c in parse_responses_tool_calls(response)] == [
        ("c1", "add", {"a": 1, "b": 2})
    ]
    (request,) = model_server.requests
    assert (request.api, request.messages, request.tool_names) == (
        "responses",
        [{"role": "user", "content": "1+2?"}],
        ["add"],
    )


async def test_the_responses_api_streams_typed_events_the_sdk_accumulates(
    model_server: ScriptedModel,
) -> None:
    model_server.add(Turn(text="Let me add.", tool_calls=[Call("add", {"a": 40, "b": 2}, id="c1")]))
    client = openai.AsyncOpenAI(base_url=model_server.url, api_key="k")

    async with client.responses.stream(
        model="m1", input=[{"role": "user", "content": "sum"}], tools=to_responses_tools([ADD])
    ) as stream:
        deltas = [e.delta async for e in stream if e.type == "response.output_text.delta"]
        final = await stream.get_final_response()

    assert deltas == ["Let ", "me ", "add."]
    assert final.output_text == "Let me add."
    assert [(c.id, c.arguments) for c in parse_responses_tool_calls(final)] == [
        ("c1", {"a": 40, "b": 2})
    ]
    assert model_server.requests[0].messages == [{"role": "user", "content": "sum"}]


async def test_a_turn_whose_match_refuses_the_request_answers_400_and_is_kept(
    model_server: ScriptedModel,
) -> None:
    model_server.add(Turn(text="only for tools", match=lambda r: r.tool_names == ["add"]))
    client = openai.AsyncOpenAI(base_url=model_server.url, api_key="k", max_retries=0)

    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(
            model="m1", messages=[{"role": "user", "content": "x"}]
        )
    answer = await client.chat.completions.create(
        model="m1",
        messages=[{"role": "user", "content": "x"}],
        tools=[{"type": "function", "function": {"name": "add", "parameters": {}}}],
    )

    assert answer.choices[0].message.content == "only for tools"
    assert model_server.problems == ["request 1 (openai): the next turn's match refused it"]


def test_the_scripted_server_speaks_json_to_a_plain_http_client(
    model_server: ScriptedModel,
) -> None:
    import httpx2

    model_server.add(Turn(text="hi"))

    reply = httpx2.post(f"{model_server.url}/chat/completions", json={"model": "x", "messages": []})
    missing = httpx2.post(f"{model_server.url}/chat/completions", json={"model": "x"})

    assert reply.json()["choices"][0]["message"]["content"] == "hi"
    assert missing.status_code == 400
    assert json.loads(missing.text)["error"]["message"] == (
        "scripted model: request 2 (openai): no scripted turn left"
    )
    assert model_server.problems == ["request 2 (openai): no scripted turn left"]

"""The OpenAI wire formats: Chat Completions and the Responses API, whole and streamed."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tests.model_server.script import Request, Turn, arguments_text, pieces, words

if TYPE_CHECKING:
    from tests.model_server.server import ScriptedModel


def chat(model: ScriptedModel, turn: Turn) -> dict[str, Any]:
    content = json.dumps(turn.structured) if turn.structured is not None else turn.text or None
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id or model._id("call"),
                "type": "function",
                "function": {"name": c.name, "arguments": arguments_text(c)},
            }
            for c in turn.tool_calls
        ]
    return {
        "id": model._id("chatcmpl"),
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if turn.tool_calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": _chat_usage(turn),
    }


def _chat_usage(turn: Turn) -> dict[str, int]:
    prompt, completion = turn.usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def chat_events(model: ScriptedModel, turn: Turn, request: Request) -> Iterator[str]:
    whole = chat(model, turn)
    base = {k: whole[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return f"data: {json.dumps(base | {'choices': [choice]})}\n\n"

    message = whole["choices"][0]["message"]
    yield chunk({"role": "assistant", "content": ""})
    for word in words(message["content"] or ""):
        yield chunk({"content": word})
    for index, call in enumerate(message.get("tool_calls", [])):
        function = call["function"]
        head = {"index": index, "id": call["id"], "type": "function"}
        yield chunk(
            {"tool_calls": [head | {"function": {"name": function["name"], "arguments": ""}}]}
        )
        for piece in pieces(function["arguments"]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, whole["choices"][0]["finish_reason"])
    if (request.body.get("stream_options") or {}).get("include_usage"):
        yield f"data: {json.dumps(base | {'choices': [], 'usage': whole['usage']})}\n\n"
    yield "data: [DONE]\n\n"


def responses(model: ScriptedModel, turn: Turn) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    text = json.dumps(turn.structured) if turn.structured is not None else turn.text
    if text:
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        output.append(
            {
                "type": "message",
                "id": model._id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
        )
    for call in turn.tool_calls:
        output.append(
            {
                "type": "function_call",
                "id": model._id("fc"),
                "call_id": call.id or model._id("call"),
                "name": call.name,
                "arguments": arguments_text(call),
                "status": "completed",
            }
        )
    prompt, completion = turn.usage
    return {
        "id": model._id("resp"),
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": model.model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
    }


def responses_events(whole: dict[str, Any]) -> Iterator[str]:
    sequence = itertools.count()

    def event(kind: str, **data: Any) -> str:
        payload = {"type": kind, "sequence_number": next(sequence), **data}
        return f"event: {kind}\ndata: {json.dumps(payload)}\n\n"

    yield event("response.created", response=whole | {"status": "in_progress", "output": []})
    for index, item in enumerate(whole["output"]):
        where = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            empty = {**item, "status": "in_progress", "content": []}
            yield event("response.output_item.added", output_index=index, item=empty)
            part = {"type": "output_text", "text": "", "annotations": []}
            yield event("response.content_part.added", **where, content_index=0, part=part)
            for word in words(text):
                yield event(
                    "response.output_text.delta", **where, content_index=0, delta=word, logprobs=[]
                )
            yield event(
                "response.output_text.done", **where, content_index=0, text=text, logprobs=[]
            )
            yield event(
                "response.content_part.done", **where, content_index=0, part=item["content"][0]
            )
        else:
            started = {**item, "status": "in_progress", "arguments": ""}
            yield event("response.output_item.added", output_index=index, item=started)
            for piece in pieces(item["arguments"]):
                yield event("response.function_callarguments_text.delta", **where, delta=piece)
            yield event(
                "response.function_callarguments_text.done", **where, arguments=item["arguments"]
            )
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=whole)

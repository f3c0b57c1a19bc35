"""The Anthropic Messages wire format, whole and streamed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tests.model_server.script import Call, Request, Turn, pieces, words

if TYPE_CHECKING:
    from tests.model_server.server import ScriptedModel


def messages(model: ScriptedModel, turn: Turn, request: Request) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    calls = list(turn.tool_calls)
    if turn.structured is not None:
        forced = (request.body.get("tool_choice") or {}).get("name") or "answer"
        calls.append(Call(forced, turn.structured))
    for call in calls:
        arguments: Any = call.arguments if isinstance(call.arguments, str) else dict(call.arguments)
        content.append(
            {
                "type": "tool_use",
                "id": call.id or model._id("toolu"),
                "name": call.name,
                "input": arguments,
            }
        )
    prompt, completion = turn.usage
    return {
        "id": model._id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model.model,
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


def messages_events(whole: dict[str, Any]) -> Iterator[str]:
    def event(data: dict[str, Any]) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"

    start = whole | {"content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": whole["usage"]["input_tokens"], "output_tokens": 0}
    yield event({"type": "message_start", "message": start})
    for index, block in enumerate(whole["content"]):
        if block["type"] == "text":
            yield event(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                }
            )
            for word in words(block["text"]):
                delta = {"type": "text_delta", "text": word}
                yield event({"type": "content_block_delta", "index": index, "delta": delta})
        else:
            head = {k: block[k] for k in ("type", "id", "name")} | {"input": {}}
            yield event({"type": "content_block_start", "index": index, "content_block": head})
            raw = block["input"] if isinstance(block["input"], str) else json.dumps(block["input"])
            for piece in pieces(raw):
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield event({"type": "content_block_delta", "index": index, "delta": delta})
        yield event({"type": "content_block_stop", "index": index})
    yield event(
        {
            "type": "message_delta",
            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": whole["usage"]["output_tokens"]},
        }
    )
    yield event({"type": "message_stop"})

"""OpenAI formats: Chat Completions and Responses tools, tool calls and tool results.

Inputs may be plain dicts (the JSON of the HTTP API) or the ``openai`` SDK's objects; outputs
are plain dicts ready to put in a request. The ``openai`` package is not needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pegboard.core.entry import ToolEntry
from pegboard.core.output import ImagePart, ToolOutput
from pegboard.formats.calls import ToolCall, as_dict
from pegboard.formats.naming import checked_name
from pegboard.formats.strict import openai_strict_schema, relax_strict_arguments

__all__ = [
    "OpenAIChat",
    "OpenAIResponses",
    "chat_tool_result",
    "parse_chat_tool_calls",
    "parse_responses_tool_calls",
    "responses_tool_result",
    "to_chat_tools",
    "to_responses_tools",
]


def _parameters(entry: ToolEntry) -> dict[str, Any]:
    if entry.tool.strict:
        return openai_strict_schema(entry.tool.input_schema, tool_name=entry.name)
    return dict(entry.tool.input_schema)


def to_chat_tools(entries: Iterable[ToolEntry]) -> list[dict[str, Any]]:
    """Chat Completions ``tools``: ``{"type": "function", "function": {...}}`` per entry.

    ``strict`` is sent only when the tool sets it (Chat Completions defaults to non-strict).
    """
    tools = []
    for entry in entries:
        function: dict[str, Any] = {
            "name": checked_name(entry.name, "OpenAI"),
            "description": entry.tool.description,
            "parameters": _parameters(entry),
        }
        if entry.tool.strict is not None:
            function["strict"] = entry.tool.strict
        tools.append({"type": "function", "function": function})
    return tools


def to_responses_tools(entries: Iterable[ToolEntry]) -> list[dict[str, Any]]:
    """Responses ``tools``: flat ``{"type": "function", "name", ...}`` per entry.

    ``strict`` is always explicit: when omitted, the Responses API normalises the schema to
    strict mode itself and makes optional parameters mandatory.
    """
    return [
        {
            "type": "function",
            "name": checked_name(entry.name, "OpenAI"),
            "description": entry.tool.description,
            "parameters": _parameters(entry),
            "strict": bool(entry.tool.strict),
        }
        for entry in entries
    ]


def parse_chat_tool_calls(message: Any) -> list[ToolCall]:
    """Tool calls of a Chat Completions assistant message, of its ``tool_calls`` list, or of
    a whole completion (its first choice).

    Non-function calls (custom tools) are skipped.
    """
    if isinstance(message, list | tuple):
        raw_calls: Any = message
    else:
        data = as_dict(message)
        if data.get("choices"):
            data = as_dict(as_dict(data["choices"][0]).get("message") or {})
        raw_calls = data.get("tool_calls") or []
    calls = []
    for raw in raw_calls:
        item = as_dict(raw)
        if item.get("type", "function") != "function":
            continue
        function = as_dict(item.get("function") or {})
        calls.append(
            ToolCall.parse(
                str(item.get("id") or ""),
                str(function.get("name") or ""),
                function.get("arguments"),
            )
        )
    return calls


def parse_responses_tool_calls(response: Any) -> list[ToolCall]:
    """``function_call`` items of a Responses output (a response or its ``output`` list).

    The call's id is ``call_id``, the id ``function_call_output`` must echo.
    """
    if isinstance(response, list | tuple):
        items: Any = response
    else:
        items = as_dict(response).get("output") or []
    calls = []
    for raw in items:
        item = as_dict(raw)
        if item.get("type") != "function_call":
            continue
        call_id = item.get("call_id") or item.get("id") or ""
        calls.append(
            ToolCall.parse(str(call_id), str(item.get("name") or ""), item.get("arguments"))
        )
    return calls


def _result_text(output: ToolOutput) -> str:
    text = output.as_text()
    if output.is_error and not text.lower().startswith("error"):
        return f"Error: {text}" if text else "Error"
    return text


def chat_tool_result(call_id: str, output: ToolOutput) -> dict[str, Any]:
    """A Chat Completions ``role: tool`` message. Media become text placeholders (tool
    messages carry text only); an error result is prefixed ``Error:``."""
    return {"role": "tool", "tool_call_id": call_id, "content": _result_text(output)}


def responses_tool_result(call_id: str, output: ToolOutput) -> dict[str, Any]:
    """A Responses ``function_call_output`` item. Images go as ``input_image`` parts, so the
    model sees them; otherwise ``output`` is a plain string."""
    images = [p for p in output.parts if isinstance(p, ImagePart)]
    if not images:
        return {"type": "function_call_output", "call_id": call_id, "output": _result_text(output)}
    rest = tuple(p for p in output.parts if not isinstance(p, ImagePart))
    text = _result_text(ToolOutput(rest, is_error=output.is_error, structured=output.structured))
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"type": "input_text", "text": text})
    parts += [
        {"type": "input_image", "image_url": f"data:{p.mime_type};base64,{p.data}"} for p in images
    ]
    return {"type": "function_call_output", "call_id": call_id, "output": parts}


def _relaxed(entry: ToolEntry, call: ToolCall) -> dict[str, Any]:
    # Strict mode makes every property required, so optionals arrive as null: drop those.
    if entry.tool.strict:
        return relax_strict_arguments(entry.tool.input_schema, call.arguments)
    return call.arguments


@dataclass(frozen=True)
class OpenAIChat:
    """OpenAI Chat Completions: ``function`` tools, ``tool_calls``, ``role: tool`` results."""

    api: Literal["openai_chat"] = "openai_chat"

    def tools(
        self, shown: Sequence[ToolEntry], deferred: Sequence[ToolEntry]
    ) -> list[dict[str, Any]]:
        return to_chat_tools(shown)

    def parse_calls(self, message: Any) -> list[ToolCall]:
        return parse_chat_tool_calls(message)

    def arguments(self, entry: ToolEntry, call: ToolCall) -> dict[str, Any]:
        return _relaxed(entry, call)

    def results(
        self, calls: Sequence[ToolCall], outputs: Sequence[ToolOutput]
    ) -> list[dict[str, Any]]:
        return [chat_tool_result(c.id, o) for c, o in zip(calls, outputs, strict=True)]


@dataclass(frozen=True)
class OpenAIResponses:
    """OpenAI Responses: flat function tools, ``function_call`` items and their outputs."""

    api: Literal["openai_responses"] = "openai_responses"

    def tools(
        self, shown: Sequence[ToolEntry], deferred: Sequence[ToolEntry]
    ) -> list[dict[str, Any]]:
        return to_responses_tools(shown)

    def parse_calls(self, message: Any) -> list[ToolCall]:
        return parse_responses_tool_calls(message)

    def arguments(self, entry: ToolEntry, call: ToolCall) -> dict[str, Any]:
        return _relaxed(entry, call)

    def results(
        self, calls: Sequence[ToolCall], outputs: Sequence[ToolOutput]
    ) -> list[dict[str, Any]]:
        return [responses_tool_result(c.id, o) for c, o in zip(calls, outputs, strict=True)]

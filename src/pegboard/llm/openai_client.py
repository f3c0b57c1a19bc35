"""A :class:`~pegboard.llm.types.ModelClient` over the official ``openai`` SDK (Chat
Completions), for OpenAI and every OpenAI-compatible server: Ollama, vLLM, LM Studio,
llama.cpp. The SDK is imported when a client is built, never at ``import pegboard``.

Retries are the SDK's own: 408/409/429/5xx and dropped connections, exponential backoff, and
the server's ``Retry-After`` (``retry-after-ms`` too) honoured up to two minutes.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx2

from pegboard.core.entry import ToolEntry
from pegboard.errors import ModelError
from pegboard.formats import ToolCall, chat_tool_result, parse_chat_tool_calls, to_chat_tools
from pegboard.llm._common import SdkClient
from pegboard.llm.types import (
    ChatResponse,
    Completed,
    Message,
    StreamEvent,
    TextDelta,
    ToolCallStarted,
    Usage,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)


class OpenAIClient(SdkClient):
    """Chat Completions at ``base_url`` (OpenAI's own when ``None``)."""

    kind = "openai"
    sdk_class = "AsyncOpenAI"
    default_base_url = DEFAULT_BASE_URL

    async def chat(
        self, messages: Sequence[Message], *, tools: Sequence[ToolEntry] = ()
    ) -> ChatResponse:
        completion = await self._create(self._params(messages, tools))
        choice = self._first_choice(completion)
        usage = completion.usage
        return ChatResponse(
            text=choice.message.content or "",
            tool_calls=tuple(parse_chat_tool_calls(choice.message)),
            stop_reason=choice.finish_reason,
            usage=Usage(usage.prompt_tokens, usage.completion_tokens) if usage else Usage(),
        )

    async def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolEntry] = ()
    ) -> AsyncIterator[StreamEvent]:
        params = self._params(messages, tools)
        params |= {"stream": True, "stream_options": {"include_usage": True}}
        chunks = await self._create(params)
        text: list[str] = []
        calls: dict[int, list[str]] = {}  # index -> [id, name, arguments so far]
        stop: str | None = None
        usage = Usage()
        try:
            async for chunk in chunks:
                if chunk.usage is not None:
                    usage = Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
                for choice in chunk.choices:
                    stop = choice.finish_reason or stop
                    delta = choice.delta
                    if delta.content:
                        text.append(delta.content)
                        yield TextDelta(delta.content)
                    for part in delta.tool_calls or ():
                        call = calls.get(part.index)
                        if call is None:
                            name = part.function.name if part.function else ""
                            call = calls[part.index] = [part.id or "", name or "", ""]
                            yield ToolCallStarted(call[0], call[1])
                        if part.function and part.function.arguments:
                            call[2] += part.function.arguments
        except (self._sdk_module.OpenAIError, httpx2.TransportError) as exc:
            raise self._error(exc, streaming=True) from None
        finally:
            await chunks.close()  # a consumer that stops early must not leave the socket open
        if stop is None:
            raise self._cut_short()
        yield Completed(
            ChatResponse(
                text="".join(text),
                tool_calls=tuple(ToolCall.parse(i, n, a) for i, n, a in calls.values()),
                stop_reason=stop,
                usage=usage,
            )
        )

    async def structured(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any], name: str
    ) -> Any:
        params = self._params(messages, ())
        # Not "strict": OpenAI's strict mode rejects most tool schemas (optional fields,
        # open objects); the caller validates the answer instead.
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": dict(schema), "strict": False},
        }
        text = self._first_choice(await self._create(params)).message.content or ""
        # Servers without schema support may still answer JSON, fenced as Markdown.
        fenced = _FENCE.fullmatch(text.strip())
        try:
            return json.loads(fenced.group(1) if fenced else text)
        except json.JSONDecodeError as exc:
            raise ModelError(
                f"Model endpoint {self.endpoint} answered a structured-output request with "
                f"text that is not JSON ({exc.msg}).",
                endpoint=self.endpoint,
            ) from None

    def _first_choice(self, completion: Any) -> Any:
        if not completion.choices:
            raise ModelError(
                f"Model endpoint {self.endpoint} answered with no choices.", endpoint=self.endpoint
            )
        return completion.choices[0]

    async def _create(self, params: dict[str, Any]) -> Any:
        try:
            return await self._sdk.chat.completions.create(**params)
        except self._sdk_module.OpenAIError as exc:
            raise self._error(exc) from None

    def _params(self, messages: Sequence[Message], tools: Sequence[ToolEntry]) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "messages": to_chat_messages(messages)}
        if tools:
            params["tools"] = to_chat_tools(tools)
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        return params


def to_chat_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Neutral messages as Chat Completions ``messages``."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            out.append(chat_tool_result(m.tool_call_id or "", m.tool_output))
        elif m.role == "assistant" and m.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": m.content or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": _arguments(c)},
                        }
                        for c in m.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def _arguments(call: ToolCall) -> str:
    if call.raw_arguments is not None:
        return call.raw_arguments  # what the model sent, even if broken: it is its history
    return json.dumps(call.arguments, ensure_ascii=False)

"""A :class:`~pegboard.llm.types.ModelClient` over the official ``anthropic`` SDK (Messages).

Structured output is a forced tool call (``tool_choice`` of one tool whose input schema is the
wanted schema): every Claude model supports it, unlike the newer output formats. Retries are
the SDK's own (429/5xx and dropped connections, backoff, ``Retry-After`` honoured).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx2

from pegboard.core.entry import ToolEntry
from pegboard.errors import ModelError
from pegboard.formats import (
    ToolCall,
    anthropic_tool_result,
    parse_anthropic_tool_calls,
    to_anthropic_tools,
)
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

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 4096


class AnthropicClient(SdkClient):
    """Anthropic Messages at ``base_url`` (Anthropic's own when ``None``)."""

    kind = "anthropic"
    sdk_class = "AsyncAnthropic"
    default_base_url = DEFAULT_BASE_URL

    async def chat(
        self, messages: Sequence[Message], *, tools: Sequence[ToolEntry] = ()
    ) -> ChatResponse:
        reply = await self._create(self._params(messages, tools))
        text = "".join(b.text for b in reply.content if b.type == "text")
        return ChatResponse(
            text=text,
            tool_calls=tuple(parse_anthropic_tool_calls(reply)),
            stop_reason=reply.stop_reason,
            usage=Usage(reply.usage.input_tokens, reply.usage.output_tokens),
        )

    async def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolEntry] = ()
    ) -> AsyncIterator[StreamEvent]:
        events = await self._create(self._params(messages, tools) | {"stream": True})
        text: list[str] = []
        calls: dict[int, list[str]] = {}  # block index -> [id, name, input JSON so far]
        stop: str | None = None
        usage_in = usage_out = 0
        try:
            async for event in events:
                if event.type == "message_start":
                    usage_in = event.message.usage.input_tokens
                elif event.type == "content_block_start" and event.content_block.type == "tool_use":
                    block = event.content_block
                    calls[event.index] = [block.id, block.name, ""]
                    yield ToolCallStarted(block.id, block.name)
                elif event.type == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        text.append(delta.text)
                        yield TextDelta(delta.text)
                    elif delta.type == "input_json_delta" and event.index in calls:
                        calls[event.index][2] += delta.partial_json
                elif event.type == "message_delta":
                    stop = event.delta.stop_reason or stop
                    usage_out = event.usage.output_tokens
        except (self._sdk_module.AnthropicError, httpx2.TransportError) as exc:
            raise self._error(exc, streaming=True) from None
        finally:
            await events.close()  # a consumer that stops early must not leave the socket open
        if stop is None:
            raise self._cut_short()
        yield Completed(
            ChatResponse(
                text="".join(text),
                # A tool_use with no input streams no delta at all: its input is {}.
                tool_calls=tuple(ToolCall.parse(i, n, a or None) for i, n, a in calls.values()),
                stop_reason=stop,
                usage=Usage(usage_in, usage_out),
            )
        )

    async def structured(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any], name: str
    ) -> Any:
        params = self._params(messages, ())
        params["tools"] = [
            {"name": name, "description": "Return the answer.", "input_schema": dict(schema)}
        ]
        params["tool_choice"] = {"type": "tool", "name": name}
        reply = await self._create(params)
        for block in reply.content:
            if block.type == "tool_use" and block.name == name:
                value = block.input
                return json.loads(value) if isinstance(value, str) else value
        raise ModelError(
            f"Model endpoint {self.endpoint} answered a structured-output request without "
            f"the forced {name} tool call.",
            endpoint=self.endpoint,
        )

    async def _create(self, params: dict[str, Any]) -> Any:
        try:
            return await self._sdk.messages.create(**params)
        except self._sdk_module.AnthropicError as exc:
            raise self._error(exc) from None

    def _params(self, messages: Sequence[Message], tools: Sequence[ToolEntry]) -> dict[str, Any]:
        system, turns = to_anthropic_messages(messages)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": turns,
        }
        if system:
            params["system"] = system
        if tools:
            params["tools"] = to_anthropic_tools(tools)
        return params


def to_anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """Neutral messages as (``system`` text, Messages ``messages``).

    System messages join the ``system`` parameter; tool results become ``tool_result`` blocks
    of one ``user`` message, as the API wants all results of a turn together.
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            system.append(m.content)
            continue
        if m.role == "tool":
            block = anthropic_tool_result(m.tool_call_id or "", m.tool_output)
            if out and out[-1]["role"] == "user" and _all_results(out[-1]["content"]):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
            continue
        if m.role == "assistant" and m.tool_calls:
            blocks: list[dict[str, Any]] = (
                [{"type": "text", "text": m.content}] if m.content else []
            )
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": blocks})
            continue
        out.append({"role": m.role, "content": m.content})
    return "\n\n".join(system), out


def _all_results(content: Any) -> bool:
    return isinstance(content, list) and all(b.get("type") == "tool_result" for b in content)

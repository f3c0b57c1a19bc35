"""The provider-neutral shapes a model client speaks: messages, answers, stream events.

A conversation is a list of :class:`Message`; tool calls are :class:`ToolCall` (the same type
the dispatcher runs, so a call the model made goes straight to ``Dispatcher.run``), and tool
results are :class:`ToolOutput` (what the dispatcher returns). Each client converts these to
its API's wire format and back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.scope import ModelInfo
from pegboard.formats.calls import ToolCall

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class Message:
    """One conversation message.

    ``assistant`` messages may carry ``tool_calls``; a ``tool`` message answers the call
    ``tool_call_id`` with ``output``. Build them with the class methods.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    output: ToolOutput | None = None

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", text)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", text)

    @classmethod
    def assistant(cls, text: str = "", tool_calls: Sequence[ToolCall] = ()) -> Message:
        return cls("assistant", text, tuple(tool_calls))

    @classmethod
    def tool(cls, call_id: str, output: ToolOutput) -> Message:
        return cls("tool", tool_call_id=call_id, output=output)

    @property
    def tool_output(self) -> ToolOutput:
        """A tool message's result (``content`` as text when no output was given)."""
        return self.output if self.output is not None else ToolOutput.text(self.content)


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """One model answer: its text, the tool calls it made, why it stopped, token usage."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)

    @property
    def message(self) -> Message:
        """The answer as the assistant message to append to the conversation."""
        return Message.assistant(self.text, self.tool_calls)


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the answer's text, as it streams in."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """The model began a tool call (its arguments are still streaming)."""

    id: str
    name: str


@dataclass(frozen=True, slots=True)
class Completed:
    """The last event of a stream: the whole answer."""

    response: ChatResponse


StreamEvent: TypeAlias = TextDelta | ToolCallStarted | Completed


@runtime_checkable
class ModelClient(Protocol):
    """A chat model behind some API. Failures raise :class:`~pegboard.errors.ModelError`
    (:class:`~pegboard.errors.ModelUnavailable` when the endpoint cannot be reached)."""

    def model_info(self) -> ModelInfo:
        """The model's id, provider and context window (``None`` when unknown)."""
        ...

    async def chat(
        self, messages: Sequence[Message], *, tools: Sequence[ToolEntry] = ()
    ) -> ChatResponse:
        """One answer to ``messages``, with ``tools`` offered to the model."""
        ...

    def stream(
        self, messages: Sequence[Message], *, tools: Sequence[ToolEntry] = ()
    ) -> AsyncIterator[StreamEvent]:
        """Like :meth:`chat`, as events; the last one is :class:`Completed`."""
        ...

    async def structured(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any], name: str
    ) -> Any:
        """A JSON value the model produced for ``schema`` (not validated here)."""
        ...

    async def aclose(self) -> None: ...

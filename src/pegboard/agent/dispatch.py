"""The dispatcher: run a model's tool calls and answer in the provider's message format.

Calls of one turn run concurrently (every supported provider allows parallel calls) and
their results come back in call order. Each call goes through
:func:`pegboard.calls.execute.execute_entry` (approval, validation) with the call's id; an
error becomes an error result the model can act on, never an exception.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import anyio

from pegboard.agent.formats import (
    ToolCall,
    anthropic_tool_result,
    chat_tool_result,
    parse_anthropic_tool_calls,
    parse_chat_tool_calls,
    parse_responses_tool_calls,
    relax_strict_arguments,
    responses_tool_result,
)
from pegboard.calls.execute import CallPolicy, CallRecord, emit_record, error_output, execute_entry
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.registry import RegistrySnapshot
from pegboard.core.scope import ToolApplyScope
from pegboard.core.tool import ToolContext
from pegboard.deferral.definitions import TOOL_SEARCH
from pegboard.deferral.pool import suggest_names
from pegboard.deferral.tool_search import TOOL_REFERENCES
from pegboard.errors import InvalidToolArguments, PegboardError, ToolError, ToolNotFound

logger = logging.getLogger("pegboard.agent.dispatch")

Api: TypeAlias = Literal["openai_chat", "openai_responses", "anthropic"]
RepairHook: TypeAlias = Callable[[ToolEntry, ToolCall, ToolError], Awaitable[dict[str, Any] | None]]
"""Called once for a call whose arguments are unusable; returns fixed arguments or None."""

_PARSERS: Mapping[Api, Callable[[Any], list[ToolCall]]] = {
    "openai_chat": parse_chat_tool_calls,
    "openai_responses": parse_responses_tool_calls,
    "anthropic": parse_anthropic_tool_calls,
}


@dataclass(frozen=True)
class Dispatcher:
    """Executes one request's tool calls. Built by :func:`~pegboard.agent.build_agent_params`."""

    api: Api
    exposed: Mapping[str, ToolEntry]
    allowed: frozenset[str]
    snapshot: RegistrySnapshot
    policy: CallPolicy
    session_id: str | None = None
    scope: ToolApplyScope | None = None
    repair: RepairHook | None = None
    tool_references: bool = False  # Anthropic native loading: searches answer with references

    def parse(self, message: Any) -> list[ToolCall]:
        """The tool calls in a provider response message (or its list of calls/blocks)."""
        return _PARSERS[self.api](message)

    async def respond(self, message: Any, *, messages: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Run the calls in ``message`` and return what to append to the conversation:
        ``role: tool`` messages (Chat), ``function_call_output`` items (Responses), or one
        ``role: user`` message of ``tool_result`` blocks (Anthropic); [] without calls."""
        calls = self.parse(message)
        if not calls:
            return []
        return self.format(calls, await self.run(calls, messages=messages))

    async def run(
        self, calls: Sequence[ToolCall], *, messages: Sequence[Any] = ()
    ) -> list[ToolOutput]:
        """Run ``calls`` concurrently; one :class:`ToolOutput` per call, in call order."""
        outputs: list[ToolOutput] = [ToolOutput.error("not run")] * len(calls)

        async def one(i: int, call: ToolCall) -> None:
            outputs[i] = await self.call(call, messages=messages)

        async with anyio.create_task_group() as group:
            for i, call in enumerate(calls):
                group.start_soon(one, i, call)
        return outputs

    async def call(self, call: ToolCall, *, messages: Sequence[Any] = ()) -> ToolOutput:
        """Run one call; failures come back as error outputs."""
        ctx = ToolContext(
            call_id=call.id, session_id=self.session_id, messages=messages, scope=self.scope
        )
        try:
            entry = self._resolve(call.name)
        except ToolError as exc:
            emit_record(
                self.policy, CallRecord(call.id, call.name, "direct", type(exc).__name__, 0.0)
            )
            return error_output(exc)
        try:
            return await self._execute(entry, call, ctx)
        except PegboardError as exc:
            fixed = await self._repair(entry, call, exc)
            if fixed is None:
                return error_output(exc, self._lookup)
            try:
                return await self._execute(entry, ToolCall(call.id, call.name, fixed), ctx)
            except PegboardError as again:
                return error_output(again, self._lookup)

    def format(
        self, calls: Sequence[ToolCall], outputs: Sequence[ToolOutput]
    ) -> list[dict[str, Any]]:
        pairs = list(zip(calls, outputs, strict=True))
        if self.api == "openai_chat":
            return [chat_tool_result(c.id, out) for c, out in pairs]
        if self.api == "openai_responses":
            return [responses_tool_result(c.id, out) for c, out in pairs]
        return [{"role": "user", "content": [self._anthropic_result(c, o) for c, o in pairs]}]

    def _anthropic_result(self, call: ToolCall, output: ToolOutput) -> dict[str, Any]:
        names = output.metadata.get(TOOL_REFERENCES)
        if self.tool_references and call.name == TOOL_SEARCH and names:
            refs = [{"type": "tool_reference", "tool_name": name} for name in names]
            return {"type": "tool_result", "tool_use_id": call.id, "content": refs}
        return anthropic_tool_result(call.id, output)

    async def _execute(self, entry: ToolEntry, call: ToolCall, ctx: ToolContext) -> ToolOutput:
        if call.parse_error is not None:
            raise InvalidToolArguments(entry.name, [call.parse_error])
        args = call.arguments
        if entry.tool.strict and self.api != "anthropic":
            args = relax_strict_arguments(entry.tool.input_schema, args)
        return await execute_entry(entry, args, ctx, via="direct", policy=self.policy)

    async def _repair(
        self, entry: ToolEntry, call: ToolCall, exc: PegboardError
    ) -> dict[str, Any] | None:
        if self.repair is None or not isinstance(exc, InvalidToolArguments):
            return None
        if exc.tool_name != entry.name:
            return None  # the inner call of tool_invoke: the model retries with the stub
        try:
            return await self.repair(entry, call, exc)
        except Exception:
            logger.exception("repair of a call to %s failed; the model gets the error", entry.name)
            return None

    def _resolve(self, name: str) -> ToolEntry:
        entry = self.exposed.get(name)
        if entry is None and name in self.allowed:
            # A deferred tool called directly after a search: still authorised and validated.
            entry = self.snapshot.get(name)
        if entry is None:
            raise ToolNotFound(
                name, suggest_names(name, [*self.exposed, *self.allowed], self.snapshot)
            )
        return entry

    def _lookup(self, name: str) -> ToolEntry | None:
        return self.exposed.get(name) or self.snapshot.get(name)

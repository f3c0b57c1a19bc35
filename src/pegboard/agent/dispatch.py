"""The dispatcher: run a model's tool calls and answer in the provider's message format.

Calls of one turn run concurrently (every supported provider allows parallel calls) and
their results come back in call order. Each call goes through the conversation's
:class:`~pegboard.toolsets.session.ToolSession` (resolve, approval, validation, audit), like the
gateway's and the CLI's; an error becomes an error result the model can act on, never an
exception.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import anyio

from pegboard.calls.execute import error_output
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.deferral.definitions import TOOL_INVOKE
from pegboard.errors import InvalidToolArguments, ToolError
from pegboard.formats import ProviderFormat, ToolCall
from pegboard.toolsets import ToolList
from pegboard.toolsets.session import ToolSession

logger = logging.getLogger("pegboard.agent.dispatch")


@dataclass(frozen=True, slots=True)
class Dispatched:
    """One call's outcome: the call as it ran (with repaired arguments when ``repaired``;
    the model's own call otherwise) and its output."""

    call: ToolCall
    output: ToolOutput
    repaired: bool = False


RepairHook: TypeAlias = Callable[[ToolEntry, ToolCall, ToolError], Awaitable[dict[str, Any] | None]]
"""Called once for a call whose arguments are unusable; returns fixed arguments or None."""

VIA = "direct"


@dataclass(frozen=True)
class Dispatcher:
    """Executes one request's tool calls. Built by :func:`~pegboard.agent.build_agent_params`."""

    format: ProviderFormat
    session: ToolSession
    tools: ToolList
    repair: RepairHook | None = None

    @property
    def api(self) -> str:
        return self.format.api

    def parse(self, message: Any) -> list[ToolCall]:
        """The tool calls in a provider response message (or its list of calls/blocks)."""
        return self.format.parse_calls(message)

    async def respond(self, message: Any, *, messages: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Run the calls in ``message`` and return what to append to the conversation:
        ``role: tool`` messages (Chat), ``function_call_output`` items (Responses), or one
        ``role: user`` message of ``tool_result`` blocks (Anthropic); [] without calls."""
        calls = self.parse(message)
        if not calls:
            return []
        return self.format.results(calls, await self.run(calls, messages=messages))

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

    def format_results(
        self, calls: Sequence[ToolCall], outputs: Sequence[ToolOutput]
    ) -> list[dict[str, Any]]:
        return self.format.results(calls, outputs)

    async def call(self, call: ToolCall, *, messages: Sequence[Any] = ()) -> ToolOutput:
        """Run one call; failures come back as error outputs."""
        return (await self.dispatch(call, messages=messages)).output

    async def dispatch(self, call: ToolCall, *, messages: Sequence[Any] = ()) -> Dispatched:
        """Run one call, repairing its arguments once if they fail validation (a deferred
        tool's own arguments too, when it is called through ``tool_invoke``); says which
        call ran. Failures come back as error outputs."""
        try:
            return Dispatched(call, await self._call(call, messages))
        except InvalidToolArguments as exc:
            fixed = await self._repair(call, exc)
            if fixed is None:
                return Dispatched(call, error_output(exc, self.tools.lookup))
            try:
                return Dispatched(fixed, await self._call(fixed, messages), repaired=True)
            except InvalidToolArguments as again:
                return Dispatched(fixed, error_output(again, self.tools.lookup), repaired=True)

    async def _call(self, call: ToolCall, messages: Sequence[Any]) -> ToolOutput:
        entry = self.tools.get(call.name)
        args = self.format.arguments(entry, call) if entry is not None else call.arguments
        return await self.session.call(
            call.name,
            args,
            call.id,
            via=VIA,
            tools=self.tools,
            messages=messages,
            unparsable=call.parse_error,
            raising=(InvalidToolArguments,),
        )

    async def _repair(self, call: ToolCall, exc: InvalidToolArguments) -> ToolCall | None:
        """``call`` with repaired arguments, or None (no repair hook, or the repair failed)."""
        entry = self.tools.get(call.name)
        if self.repair is None or entry is None:
            return None
        target = (entry, call) if exc.tool_name == entry.name else self._invoked(call, exc)
        if target is None:
            return None
        try:
            fixed = await self.repair(target[0], target[1], exc)
        except Exception:
            logger.exception("repair of a call to %s failed; the model gets the error", entry.name)
            return None
        if fixed is None:
            return None
        if target[1] is call:
            return ToolCall(call.id, call.name, fixed)
        return ToolCall(call.id, call.name, {**call.arguments, "params": fixed})

    def _invoked(
        self, call: ToolCall, exc: InvalidToolArguments
    ) -> tuple[ToolEntry, ToolCall] | None:
        """The inner call of a ``tool_invoke`` whose params failed the deferred tool's
        schema: that tool's entry and its params as a call of their own."""
        if call.name != TOOL_INVOKE or call.arguments.get("name") != exc.tool_name:
            return None
        inner = self.tools.get(exc.tool_name or "")
        if inner is None:
            return None
        params = call.arguments.get("params")
        return inner, ToolCall.parse(f"{call.id}::{inner.name}", inner.name, params)

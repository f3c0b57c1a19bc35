"""The agent loop of ``pegboard chat``: a model and the runtime's tools, turn after turn.

One user turn is as many model rounds as the model needs: each round streams one answer;
its tool calls run through the dispatcher of :func:`~pegboard.agent.build_agent_params`
(the composed toolset every route uses: deferral with the meta-tools, validation, repair,
approval, audit) and their results go back to the model, until it answers without calls or
the round cap is reached. Tools are listed again every round, so servers that warm in the
background contribute their tools as soon as they are known.

A turn changes the conversation only when it completes: a cancelled turn (Ctrl-C) or a
failed model call leaves :attr:`AgentLoop.messages` as it was, never half a tool exchange.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import anyio

from pegboard.agent.params import AgentParams, AgentSession, build_agent_params
from pegboard.core.output import ToolOutput
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ModelInfo, ToolApplyScope
from pegboard.core.status import NamespaceStatus
from pegboard.deferral.tool_exec import ExecSettings
from pegboard.formats.calls import ToolCall
from pegboard.llm.repair import Repairer, create_repair
from pegboard.llm.types import Completed, Message, ModelClient, TextDelta, Usage
from pegboard.search.interface import SearchIndex

if TYPE_CHECKING:
    from pegboard.calls.approval import ApprovalHandler
    from pegboard.runtime import ToolRuntime

DEFAULT_MAX_ROUNDS = 12
SYSTEM_PROMPT = (
    "You are a helpful assistant in a terminal. Use the tools when they help with the user's "
    "request; when you have the answer, give it concisely without further tool calls."
)


class LoopObserver(Protocol):
    """What a front end is told while a turn runs (all optional to act on)."""

    def on_text(self, delta: str) -> None: ...

    def on_tool_result(self, call: ToolCall, output: ToolOutput) -> None: ...


@dataclass(frozen=True, slots=True)
class TurnResult:
    """One finished user turn: the final ``answer``, the ``messages`` it added (user message
    first), model ``rounds`` used, and whether it ``capped`` (stopped at the round cap)."""

    answer: str
    messages: tuple[Message, ...]
    rounds: int
    capped: bool = False


@dataclass
class AgentLoop:
    """A conversation between ``client`` and the tools of ``registry`` for ``scope()``.

    ``statuses`` and ``index`` are the runtime's (namespace states for the prompt section,
    the shared search index of ``tool_search``); ``fallback_window`` sizes deferral when the
    model's context window is unknown; ``tool_exec`` offers it beside the meta-tools. Gated
    calls ask ``approval_handler``; invalid arguments go to :attr:`repairer` (at most its cap
    of model repairs per round).
    """

    client: ModelClient
    registry: ToolRegistry
    scope: Callable[[], ToolApplyScope]
    statuses: Callable[[], Mapping[str, NamespaceStatus]] | None = None
    index: SearchIndex | None = None
    approval_handler: ApprovalHandler | None = None
    fallback_window: int | None = None
    tool_exec: bool | ExecSettings = False
    system_prompt: str = SYSTEM_PROMPT
    max_rounds: int = DEFAULT_MAX_ROUNDS
    session: AgentSession = field(default_factory=AgentSession)
    messages: list[Message] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    repairer: Repairer = field(init=False)

    def __post_init__(self) -> None:
        self.repairer = create_repair(self.client)
        if self.approval_handler is not None:
            self.session.calls.approval_handler = self.approval_handler

    @classmethod
    def from_runtime(
        cls,
        runtime: ToolRuntime,
        client: ModelClient,
        *,
        approval_handler: ApprovalHandler | None = None,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
    ) -> AgentLoop:
        """The loop over ``runtime``'s profile: its registry, scope, statuses, index, audit."""
        return cls(
            client,
            runtime.registry,
            runtime.scope,
            statuses=runtime.namespace_statuses,
            index=runtime.index,
            approval_handler=approval_handler,
            fallback_window=runtime.context_window,
            tool_exec=runtime.surface.tool_exec or False,
            max_rounds=max_rounds,
            session=AgentSession(audit=runtime.calls.audit),
        )

    def model_info(self) -> ModelInfo:
        """The client's model, its context window defaulted to :attr:`fallback_window`."""
        info = self.client.model_info()
        if info.context_window is None and self.fallback_window is not None:
            return ModelInfo(info.id, info.provider, self.fallback_window)
        return info

    def params(self) -> AgentParams:
        """This moment's tools, prompt section and dispatcher (cached while nothing changed)."""
        return build_agent_params(
            self.registry,
            self.scope(),
            self.model_info(),
            session=self.session,
            statuses=dict(self.statuses()) if self.statuses else None,
            index=self.index,
            repair=self.repairer,
            tool_exec=self.tool_exec,
        )

    async def run_turn(self, text: str, observer: LoopObserver | None = None) -> TurnResult:
        """Answer ``text``: model rounds and tool calls until an answer or the round cap.

        Raises :class:`~pegboard.errors.ModelError` when the model cannot be reached (the
        conversation is then unchanged).
        """
        added: list[Message] = [Message.user(text)]
        for round_no in range(1, self.max_rounds + 1):
            params = self.params()
            self.repairer.new_turn()
            system = "\n\n".join(p for p in (self.system_prompt, params.system_prompt) if p)
            conversation = [Message.system(system), *self.messages, *added]
            response = None
            async for event in self.client.stream(conversation, tools=params.entries):
                if isinstance(event, TextDelta) and observer is not None:
                    observer.on_text(event.text)
                elif isinstance(event, Completed):
                    response = event.response
            assert response is not None  # every stream ends with Completed
            self.usage = Usage(
                self.usage.input_tokens + response.usage.input_tokens,
                self.usage.output_tokens + response.usage.output_tokens,
            )
            added.append(response.message)
            if not response.tool_calls:
                return self._commit(TurnResult(response.text, tuple(added), round_no))
            outputs = await self._run_calls(params, response.tool_calls, conversation, observer)
            added += [
                Message.tool(c.id, o) for c, o in zip(response.tool_calls, outputs, strict=True)
            ]
        return self._commit(TurnResult("", tuple(added), self.max_rounds, capped=True))

    def _commit(self, result: TurnResult) -> TurnResult:
        self.messages += result.messages
        return result

    async def _run_calls(
        self,
        params: AgentParams,
        calls: tuple[ToolCall, ...],
        conversation: list[Message],
        observer: LoopObserver | None,
    ) -> list[ToolOutput]:
        """Run one round's calls concurrently; each is reported as soon as it finishes."""
        outputs = [ToolOutput.error("not run")] * len(calls)

        async def one(i: int, call: ToolCall) -> None:
            outputs[i] = await params.dispatcher.call(call, messages=conversation)
            if observer is not None:
                observer.on_tool_result(call, outputs[i])

        async with anyio.create_task_group() as group:
            for i, call in enumerate(calls):
                group.start_soon(one, i, call)
        return outputs

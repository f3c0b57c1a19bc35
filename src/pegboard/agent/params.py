"""``build_agent_params``: the tools, the system-prompt section and a dispatcher for one request.

::

    session = AgentSession(approval_handler=CallbackApprovalHandler(ask_user))
    params = build_agent_params(registry, scope, ModelInfo("gpt-4.1", "openai", 128_000),
                                session=session)
    response = client.chat.completions.create(model=..., tools=params.tools, messages=[
        {"role": "system", "content": base_prompt + "\\n\\n" + params.system_prompt}, ...])
    messages += await params.dispatcher.respond(response.choices[0].message)

The tool list is deterministic: while the registry (and scope, model, statuses) do not
change, every turn gets the same list byte for byte, so provider prompt caches stay warm.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import InitVar, dataclass, field
from functools import cached_property
from typing import Any

from pegboard.agent.dispatch import Dispatcher, RepairHook
from pegboard.calls.approval import ApprovalHandler
from pegboard.calls.audit import AuditSink
from pegboard.calls.session import CallSession
from pegboard.core.entry import ToolEntry
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ModelInfo, ToolApplyScope
from pegboard.core.status import NamespaceStatus
from pegboard.core.tokens import TokenCounter
from pegboard.deferral import Exposition
from pegboard.deferral.tool_exec import ExecSettings
from pegboard.formats import Api, format_for
from pegboard.search.interface import SearchIndex
from pegboard.toolsets.session import Deferral, ToolSession

__all__ = ["AgentParams", "AgentSession", "Api", "build_agent_params"]


@dataclass
class AgentSession:
    """What lasts a conversation: approvals and who gives them, audit, sticky deferral.

    ``approval_handler`` asks a human about gated calls (without one they are refused);
    ``audit`` receives one :class:`~pegboard.calls.CallRecord` per call. Both end up in
    :attr:`calls`, the session's :class:`~pegboard.calls.CallSession`. ``auto_deferred``
    remembers that the auto pool was deferred, so it stays deferred while that still pays
    (see ``sticky`` in :func:`pegboard.deferral.should_defer`).
    """

    approval_handler: InitVar[ApprovalHandler | None] = None
    audit: InitVar[AuditSink | None] = None
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    calls: CallSession = field(default_factory=CallSession)
    auto_deferred: bool = False
    _cache: dict[tuple[Any, ...], AgentParams] = field(default_factory=dict, repr=False)
    _tools: tuple[tuple[Any, ...], ToolSession] | None = field(default=None, repr=False)

    def tool_session(self, key: tuple[Any, ...], make: Callable[[], ToolSession]) -> ToolSession:
        """The conversation's :class:`~pegboard.toolsets.ToolSession` for one composition
        (registry, deferral settings); a different one replaces it (same calls session)."""
        if self._tools is None or self._tools[0] != key:
            self._tools = (key, make())
        return self._tools[1]

    def __post_init__(
        self, approval_handler: ApprovalHandler | None, audit: AuditSink | None
    ) -> None:
        self.calls.session_id = self.session_id
        if approval_handler is not None:
            self.calls.approval_handler = approval_handler
        if audit is not None:
            self.calls.audit = audit


@dataclass(frozen=True)
class AgentParams:
    """One request's tools (provider format), prompt section and dispatcher.

    :attr:`tools` is formatted on first use: a caller that hands :attr:`entries` to a model
    client (``pegboard chat``) never pays for a second formatting.
    """

    api: Api
    system_prompt: str
    dispatcher: Dispatcher
    exposition: Exposition | None
    entries: tuple[ToolEntry, ...]

    @cached_property
    def tools(self) -> list[dict[str, Any]]:
        listing = self.dispatcher.tools
        return self.dispatcher.format.tools(listing.shown, listing.hidden)


def build_agent_params(
    registry: ToolRegistry,
    scope: ToolApplyScope,
    model: ModelInfo,
    *,
    api: Api | None = None,
    session: AgentSession | None = None,
    approval_handler: ApprovalHandler | None = None,
    audit: AuditSink | None = None,
    statuses: Mapping[str, NamespaceStatus] | None = None,
    counter: TokenCounter | None = None,
    index: SearchIndex | None = None,
    repair: RepairHook | None = None,
    native_defer: bool = False,
    tool_exec: bool | ExecSettings = False,
) -> AgentParams:
    """Select the active tools, apply deferral, convert to ``api``'s format.

    ``api`` defaults from ``model.provider`` (``anthropic`` -> Anthropic Messages, anything
    else -> OpenAI Chat Completions). Pass the same ``session`` every turn: it keeps the
    approvals and grants, and returns the very same params while nothing changed.
    ``approval_handler`` and ``audit`` are set on the session (see :class:`AgentSession`).

    ``native_defer`` (Anthropic only) uses the provider's deferred loading: deferred tools
    are sent with ``defer_loading: true`` next to ``tool_search`` alone, whose results come
    back as ``tool_reference`` blocks, so the model calls what it found directly.

    ``tool_exec`` (``True``, or :class:`~pegboard.deferral.tool_exec.ExecSettings` for other
    limits or a sandbox of your own) offers ``tool_exec`` beside the meta-tools whenever tools
    are deferred: the model's Python calls this request's tools through the same approval
    (non-interactive: a gated tool raises ``PermissionError`` in the code) and audit. Needs
    ``pip install 'pegboard[exec]'``; the sandbox starts on the first run.
    """
    session = session if session is not None else AgentSession()
    if approval_handler is not None:
        session.calls.approval_handler = approval_handler
    if audit is not None:
        session.calls.audit = audit
    chosen: Api = api or ("anthropic" if model.provider == "anthropic" else "openai_chat")
    native = native_defer and chosen == "anthropic"
    exec_settings = tool_exec if isinstance(tool_exec, ExecSettings) else None
    if tool_exec is True:
        exec_settings = ExecSettings()
    key = (
        id(registry),
        registry.version,
        scope,
        model,
        chosen,
        native,
        exec_settings,
        tuple(sorted((statuses or {}).items())),
    )
    cached = session._cache.get(key)
    if cached is not None:
        return cached
    deferral = Deferral(
        index=index,
        statuses=(lambda: {}) if statuses is not None else None,
        tool_exec=exec_settings,
        counter=counter,
        native_loading=native,
        sticky=session.auto_deferred,
    )
    composition: tuple[Any, ...] = (id(registry), id(index), id(counter), native)
    composition += (statuses is None, exec_settings)
    tool_session = session.tool_session(
        composition, lambda: ToolSession(registry, lambda: scope, session.calls, deferral)
    )
    tool_session.scope = lambda: scope
    tool_session.refresh(context_window=model.context_window, statuses=statuses)
    tools = tool_session.tools
    session.auto_deferred = tool_session.auto_deferred
    fmt = format_for(chosen, native_loading=native)
    params = AgentParams(
        api=chosen,
        system_prompt=tools.prompt_section,
        dispatcher=Dispatcher(fmt, tool_session, tools, repair=repair),
        exposition=tools.exposition,
        entries=tools.shown,
    )
    session._cache.clear()
    session._cache[key] = params
    return params

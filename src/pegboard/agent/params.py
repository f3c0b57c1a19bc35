"""``build_agent_params``: the tools, the system-prompt section and a dispatcher for one request.

::

    session = AgentSession()
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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pegboard.agent.dispatch import Api, Dispatcher, RepairHook
from pegboard.agent.formats import to_anthropic_tools, to_chat_tools, to_responses_tools
from pegboard.calls.execute import AuditSink, CallPolicy
from pegboard.core.entry import ToolEntry
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ModelInfo, ToolApplyScope
from pegboard.core.tokens import TokenCounter
from pegboard.deferral import Exposition, NamespaceStatus, apply_defer_exposition
from pegboard.deferral.ledger import InspectLedger
from pegboard.search.interface import SearchIndex

if TYPE_CHECKING:
    from pegboard.mcp import McpCatalog

__all__ = ["AgentParams", "AgentSession", "Api", "build_agent_params", "statuses_from_catalog"]

_TO_TOOLS: Mapping[Api, Callable[[list[ToolEntry]], list[dict[str, Any]]]] = {
    "openai_chat": to_chat_tools,
    "openai_responses": to_responses_tools,
    "anthropic": to_anthropic_tools,
}


@dataclass
class AgentSession:
    """What lasts a conversation: the inspect ledger, approval grants and handler, audit.

    ``auto_deferred`` remembers that the auto pool was deferred, so it stays deferred while
    that still pays (see ``sticky`` in :func:`pegboard.deferral.should_defer`).
    """

    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    ledger: InspectLedger = field(default_factory=InspectLedger)
    policy: CallPolicy = field(default_factory=CallPolicy)
    auto_deferred: bool = False
    _cache: dict[tuple[Any, ...], AgentParams] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class AgentParams:
    """One request's tools (provider format), prompt section and dispatcher."""

    api: Api
    tools: list[dict[str, Any]]
    system_prompt: str
    dispatcher: Dispatcher
    exposition: Exposition
    entries: tuple[ToolEntry, ...]


def build_agent_params(
    registry: ToolRegistry,
    scope: ToolApplyScope,
    model: ModelInfo,
    *,
    api: Api | None = None,
    session: AgentSession | None = None,
    statuses: Mapping[str, NamespaceStatus] | None = None,
    descriptions: Mapping[str, str] | None = None,
    counter: TokenCounter | None = None,
    index: SearchIndex | None = None,
    repair: RepairHook | None = None,
    audit: AuditSink | None = None,
    native_defer: bool = False,
) -> AgentParams:
    """Select the active tools, apply deferral, convert to ``api``'s format.

    ``api`` defaults from ``model.provider`` (``anthropic`` -> Anthropic Messages, anything
    else -> OpenAI Chat Completions). Pass the same ``session`` every turn: it keeps the
    inspect ledger and approvals, and returns the very same params while nothing changed.

    ``native_defer`` (Anthropic only) uses the provider's deferred loading: deferred tools
    are sent with ``defer_loading: true`` next to ``tool_search`` alone, whose results come
    back as ``tool_reference`` blocks, so the model calls what it found directly.
    """
    session = session if session is not None else AgentSession()
    if audit is not None:
        session.policy.audit = audit
    chosen: Api = api or ("anthropic" if model.provider == "anthropic" else "openai_chat")
    native = native_defer and chosen == "anthropic"
    snapshot = registry.snapshot()
    key = (
        id(registry),
        snapshot.version,
        scope,
        model,
        chosen,
        native,
        tuple(sorted((statuses or {}).items())),
        tuple(sorted((descriptions or {}).items())),
    )
    cached = session._cache.get(key)
    if cached is not None:
        return cached
    active = registry.select_active(scope)
    exposition = apply_defer_exposition(
        {e.name: e.tool for e in active},
        registry,
        model.context_window,
        counter=counter,
        index=index,
        ledger=session.ledger,
        policy=session.policy,
        statuses=statuses,
        descriptions=descriptions,
        native_loading=native,
        sticky=session.auto_deferred,
    )
    session.auto_deferred = any(e.defer == "auto" for e in exposition.deferred)
    by_name = {e.name: e for e in active}
    entries = tuple(
        by_name.get(name) or ToolEntry(name=name, namespace="meta", tool=tool, defer="never")
        for name, tool in exposition.tools.items()
    )
    dispatcher = Dispatcher(
        api=chosen,
        exposed={e.name: e for e in entries},
        allowed=exposition.allowed,
        snapshot=snapshot,
        policy=session.policy,
        session_id=session.session_id,
        scope=scope,
        repair=repair,
        tool_references=native,
    )
    tools = _TO_TOOLS[chosen](list(entries))
    if native:
        tools += [{**t, "defer_loading": True} for t in to_anthropic_tools(exposition.deferred)]
    params = AgentParams(
        api=chosen,
        tools=tools,
        system_prompt=exposition.prompt_section,
        dispatcher=dispatcher,
        exposition=exposition,
        entries=entries,
    )
    session._cache.clear()
    session._cache[key] = params
    return params


def statuses_from_catalog(catalog: McpCatalog) -> dict[str, NamespaceStatus]:
    """Namespace statuses (``mcp:<server id>``) from the MCP catalog, for the prompt section
    (cold and failing servers are shown to the model)."""
    return {
        f"mcp:{s.server_id}": NamespaceStatus(
            f"mcp:{s.name}",
            s.state,
            s.error.replace(s.server_id, s.name) if s.error else None,  # ids stay internal
        )
        for s in catalog.statuses()
    }

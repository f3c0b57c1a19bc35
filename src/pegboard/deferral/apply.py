"""Apply deferral to one request's tools: strip the deferred, inject the meta-tools."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from pegboard.calls.session import CallSession
from pegboard.core.entry import ToolEntry
from pegboard.core.registry import ToolRegistry
from pegboard.core.status import NamespaceStatus
from pegboard.core.tokens import TokenCounter, default_token_counter
from pegboard.core.tool import Tool
from pegboard.deferral.defer import DeferDecision, should_defer
from pegboard.deferral.definitions import WITH_EXEC
from pegboard.deferral.pool import DeferredPool
from pegboard.deferral.prompt import render_deferred_section
from pegboard.deferral.tool_exec import (
    ExecSettings,
    alias_lookup,
    code_tools,
    make_pool_tool_exec,
)
from pegboard.deferral.tool_inspect import make_tool_inspect
from pegboard.deferral.tool_invoke import make_tool_invoke
from pegboard.deferral.tool_search import make_tool_search
from pegboard.search.interface import SearchIndex
from pegboard.search.synced import registry_index

logger = logging.getLogger("pegboard.deferral")


@dataclass(frozen=True)
class Exposition:
    """What the model is given for one request.

    ``tools`` is the very object passed in when nothing is deferred. ``allowed`` is every tool
    ``tool_invoke`` and ``tool_exec`` code may reach in this request (fixed here, before
    meta-tools are added).
    """

    tools: Mapping[str, Tool]
    deferred: tuple[ToolEntry, ...]
    allowed: frozenset[str]
    prompt_section: str
    decision: DeferDecision | None
    pool: DeferredPool | None = None


def apply_defer_exposition(
    tools: Mapping[str, Tool],
    registry: ToolRegistry,
    context_window: int | None,
    *,
    counter: TokenCounter | None = None,
    index: SearchIndex | None = None,
    session: CallSession | None = None,
    statuses: Mapping[str, NamespaceStatus] | None = None,
    native_loading: bool = False,
    sticky: bool = False,
    tool_exec: ExecSettings | None = None,
) -> Exposition:
    """Defer what :func:`should_defer` says and inject ``tool_search``/``inspect``/``invoke``
    (and ``tool_exec`` when ``tool_exec`` settings are given).

    Tools without a registry entry are left alone. ``session`` carries the session
    (approval grants, audit); ``index`` defaults to the registry's
    incrementally updated index. ``native_loading`` (Anthropic's ``defer_loading``: the
    provider loads what ``tool_search`` finds) injects ``tool_search`` alone. ``sticky``: see
    :func:`should_defer`.

    ``tool_exec`` is offered only beside the other meta-tools, never when nothing is deferred
    nor with ``native_loading`` (where ``tool_search`` stands alone): its Python signatures
    come from ``tool_inspect``, and a small inline pool is already called in parallel by the
    provider's own tool calls.
    """
    allowed = frozenset(tools)
    clash = allowed.intersection(WITH_EXEC)
    if clash:
        logger.warning("request already has %s; deferral skipped", ", ".join(sorted(clash)))
    snapshot = registry.snapshot()
    candidates = [e for name in tools if (e := snapshot.get(name)) is not None]
    if not candidates or clash:
        return Exposition(tools, (), allowed, "", None)
    counter = counter or default_token_counter()
    decision = should_defer(
        candidates,
        context_window,
        counter,
        statuses=statuses,
        sticky=sticky,
        tool_exec=tool_exec is not None and not native_loading,
    )
    if not decision.names:
        return Exposition(tools, (), allowed, "", decision)
    deferred = tuple(sorted((e for e in candidates if e.name in decision.names), key=_by_name))
    pool = DeferredPool(
        snapshot=snapshot,
        deferred=deferred,
        allowed=allowed,
        index=index if index is not None else registry_index(registry),
        session=session if session is not None else CallSession(),
        counter=counter,
    )
    exposed = {name: tool for name, tool in tools.items() if name not in decision.names}
    search = make_tool_search(pool)
    exposed["tool_search"] = search
    if not native_loading:
        code = code_tools(pool, search) if tool_exec is not None else None
        exposed["tool_inspect"] = make_tool_inspect(pool, alias_lookup(code) if code else None)
        exposed["tool_invoke"] = make_tool_invoke(pool)
        if code is not None and tool_exec is not None:
            exposed["tool_exec"] = make_pool_tool_exec(code, tool_exec)
    section = render_deferred_section(
        list(exposed),
        deferred,
        statuses=statuses,
        counter=counter,
        loads_found_tools=native_loading,
    )
    return Exposition(exposed, deferred, allowed, section, decision, pool)


def _by_name(entry: ToolEntry) -> str:
    return entry.name

"""Deferral as a wrapper: large pools go behind ``tool_search`` / ``tool_inspect`` /
``tool_invoke``; the deferred tools stay callable by their wire name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pegboard.calls.session import CallSession
from pegboard.core.entry import ToolEntry
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ToolApplyScope
from pegboard.core.status import NamespaceStatus
from pegboard.core.tokens import TokenCounter
from pegboard.deferral.apply import apply_defer_exposition
from pegboard.deferral.tool_exec import ExecSettings
from pegboard.search.interface import SearchIndex
from pegboard.toolsets.base import ToolList, WrapperToolset

StatusSource = Callable[[], Mapping[str, NamespaceStatus]]


@dataclass(frozen=True)
class DeferralSettings:
    """How one route defers: the model's window and what the meta-tools share.

    ``session`` is what ``tool_invoke``'s inner calls are authorised and audited with;
    ``sticky`` keeps an auto-deferred pool deferred while that still pays (the owner passes
    :attr:`ToolList.auto_deferred` of its previous listing). ``tool_exec`` (None: off)
    injects ``tool_exec`` beside the other meta-tools.
    """

    registry: ToolRegistry
    context_window: int | None = None
    session: CallSession = field(default_factory=CallSession)
    counter: TokenCounter | None = None
    index: SearchIndex | None = None
    statuses: StatusSource | None = None
    native_loading: bool = False
    sticky: bool = False
    tool_exec: ExecSettings | None = None


@dataclass(frozen=True)
class DeferredToolset(WrapperToolset):
    """Applies :func:`~pegboard.deferral.apply_defer_exposition` to the inner listing."""

    settings: DeferralSettings = field(kw_only=True)

    def list_tools(self, scope: ToolApplyScope) -> ToolList:
        base = self.inner.list_tools(scope)
        s = self.settings
        exposition = apply_defer_exposition(
            {e.name: e.tool for e in base.shown},
            s.registry,
            s.context_window or (scope.model.context_window if scope.model else None),
            counter=s.counter,
            index=s.index,
            session=s.session,
            statuses=s.statuses() if s.statuses else None,
            native_loading=s.native_loading,
            sticky=s.sticky,
            tool_exec=s.tool_exec,
        )
        if not exposition.deferred:
            return ToolList(base.shown, base.snapshot, base.hidden, "", exposition)
        by_name = {e.name: e for e in base.shown}
        shown = tuple(
            by_name.get(name) or ToolEntry(name=name, namespace="meta", tool=tool, defer="never")
            for name, tool in exposition.tools.items()
        )
        hidden = (*base.hidden, *exposition.deferred)
        return ToolList(shown, base.snapshot, hidden, exposition.prompt_section, exposition)

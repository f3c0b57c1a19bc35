"""Deferral as a wrapper: large pools go behind ``tool_search`` / ``tool_inspect`` /
``tool_invoke``; the deferred tools stay callable by their wire name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pegboard.calls.session import CallSession
from pegboard.core.entry import ToolEntry
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ToolApplyScope
from pegboard.core.status import NamespaceStatus
from pegboard.core.tokens import TokenCounter
from pegboard.search.interface import SearchIndex
from pegboard.toolsets.base import ToolList, WrapperToolset

if TYPE_CHECKING:  # deferral's modules load with the first deferring listing
    from pegboard.deferral.tool_exec import ExecSettings

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


@dataclass
class DeferralState:
    """What one owner's listings carry over: whether the auto pool was deferred last time
    (the next listing's ``sticky``) and the context window of the next listing (None: the
    settings', else the scope model's)."""

    sticky: bool = False
    context_window: int | None = None


@dataclass(frozen=True)
class DeferredToolset(WrapperToolset):
    """Applies :func:`~pegboard.deferral.apply_defer_exposition` to the inner listing."""

    settings: DeferralSettings = field(kw_only=True)
    state: DeferralState = field(kw_only=True, default_factory=DeferralState)

    def __post_init__(self) -> None:
        self.state.sticky = self.state.sticky or self.settings.sticky

    def list_tools(self, scope: ToolApplyScope) -> ToolList:
        from pegboard.deferral.apply import apply_defer_exposition  # lazy: see the imports

        base = self.inner.list_tools(scope)
        s = self.settings
        model_window = scope.model.context_window if scope.model else None
        exposition = apply_defer_exposition(
            {e.name: e.tool for e in base.shown},
            s.registry,
            self.state.context_window or s.context_window or model_window,
            counter=s.counter,
            index=s.index,
            session=s.session,
            statuses=s.statuses() if s.statuses else None,
            native_loading=s.native_loading,
            sticky=self.state.sticky,
            tool_exec=s.tool_exec,
        )
        self.state.sticky = bool(exposition.deferred) and any(
            e.defer == "auto" for e in exposition.deferred
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

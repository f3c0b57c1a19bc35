"""The toolset protocol: list the tools for a scope; call one of them by name.

The shape of pydantic-ai's ``toolsets/abstract.py``: a source of tools, and small wrappers
that each add one concern (approval, deferral, audit) around another toolset. A route (the
agent dispatcher, the gateway, ``pegboard tools call``) lists once per request or refresh and
passes that :class:`ToolList` back with every call, so a call resolves against exactly the
tools the model was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Protocol

from pegboard.calls.session import Call
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.core.registry import RegistrySnapshot
from pegboard.core.resolve import resolve_name
from pegboard.core.scope import ToolApplyScope
from pegboard.toolsets.plan import CallPlan

if TYPE_CHECKING:
    from pegboard.core.access import AccessView
    from pegboard.deferral.apply import Exposition


@dataclass(frozen=True)
class ToolList:
    """The tools of one request: ``shown`` to the model (in order), ``hidden`` ones (deferred)
    callable by their wire name too, and the system-prompt section that goes with them."""

    shown: tuple[ToolEntry, ...]
    snapshot: RegistrySnapshot
    hidden: tuple[ToolEntry, ...] = ()
    prompt_section: str = ""
    exposition: Exposition | None = None

    @cached_property
    def by_name(self) -> dict[str, ToolEntry]:
        return {e.name: e for e in (*self.hidden, *self.shown)}

    @property
    def names(self) -> list[str]:
        return [e.name for e in self.shown]

    def get(self, name: str) -> ToolEntry | None:
        return self.by_name.get(name)

    def resolve(self, name: str) -> ToolEntry:
        """The callable entry ``name``, or :class:`~pegboard.errors.ToolNotAllowed` /
        :class:`~pegboard.errors.ToolNotFound` (with suggestions). A tool's pre-hyphen wire
        name (a client's cached list, an old script) resolves to the tool."""
        if name not in self.by_name:
            name = self.snapshot.canonical(name)
        return resolve_name(name, self.by_name.get(name), self.by_name, self.snapshot)

    @cached_property
    def _plans(self) -> dict[str, CallPlan]:
        return {}

    def plan(self, name: str) -> CallPlan | None:
        """The prepared calls of the tool this listing calls ``name``
        (:class:`~pegboard.toolsets.plan.CallPlan`), made on its first call and kept with
        this listing (a new listing starts without any); None: that name's calls take the
        composed toolset's every step."""
        plans = self._plans
        plan = plans.get(name)
        if plan is None:
            plan = CallPlan.of(self, name)
            if plan is not None:
                plans[name] = plan
        return plan

    def lookup(self, name: str) -> ToolEntry | None:
        """Any entry of that name, callable here or not (for an error's signature stub)."""
        return self.by_name.get(name) or self.snapshot.get(name)

    def prepare(self) -> None:
        """Build the lookups a call reads now (the name map, the deferred pool's name set),
        on the listing's path, instead of during the first call against this listing: each is
        linear in the tools (~3 ms apiece at 5,000) and a listing is made anew by every
        refresh, so the first ``tool_search`` after each one paid both."""
        _ = self.by_name
        pool = self.exposition.pool if self.exposition is not None else None
        if pool is not None:
            _ = pool.deferred_names

    @property
    def auto_deferred(self) -> bool:
        """Whether the auto pool was deferred (the next listing's ``sticky``)."""
        deferred = self.exposition.deferred if self.exposition else ()
        return any(e.defer == "auto" for e in deferred)

    def narrowed(self, view: AccessView) -> ToolList:
        """This listing as the principals of ``view`` see it: the tools they may not use are
        gone from it and from its snapshot, so naming one (by any spelling) is an unknown
        tool, with suggestions only among theirs. Kept per view until the listing changes."""
        return view.memo("listing", self, lambda: self._narrowed(view))

    def _narrowed(self, view: AccessView) -> ToolList:
        return ToolList(
            tuple(e for e in self.shown if view.allows_entry(e)),
            view.snapshot(self.snapshot),
            tuple(e for e in self.hidden if view.allows_entry(e)),
            self.prompt_section,
            self.exposition,
        )

    def entries(self) -> Sequence[ToolEntry]:
        """Every callable entry, shown first."""
        shown = {e.name for e in self.shown}
        return [*self.shown, *(e for e in self.hidden if e.name not in shown)]


class Toolset(Protocol):
    """A source of tools: list them for a scope, call one of a listing by name."""

    def list_tools(self, scope: ToolApplyScope) -> ToolList: ...

    async def call_tool(self, call: Call, tools: ToolList) -> ToolOutput:
        """Run ``call`` against ``tools`` (what :meth:`list_tools` returned); raise a
        :class:`~pegboard.errors.ToolError` when it cannot run."""
        ...


@dataclass(frozen=True)
class WrapperToolset:
    """A toolset that hands everything to ``inner``; wrappers override one method."""

    inner: Toolset

    def list_tools(self, scope: ToolApplyScope) -> ToolList:
        return self.inner.list_tools(scope)

    async def call_tool(self, call: Call, tools: ToolList) -> ToolOutput:
        return await self.inner.call_tool(call, tools)

"""The tool session: one scope's composed toolset, its current listing, and every call on it.

Every route holds one :class:`ToolSession`: the library dispatcher (through
:func:`~pegboard.agent.build_agent_params`), ``pegboard serve`` (one for the gateway, each client
connection calling with its own session id), ``pegboard tools call``, the framework
integrations and ``pegboard chat``. It composes the toolset once (audit(approval(deferral(
registry)))), lists it on :meth:`refresh` (deferral stays sticky across listings, listeners hear
of real changes) and runs calls through :meth:`call`, the one place a route's
:class:`~pegboard.calls.session.Call` is built. Meta-tools' inner calls run in the same
:class:`~pegboard.calls.session.CallSession` (through the call's context), so the grants of a
direct call cover the same call made through ``tool_invoke``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pegboard.calls.approval import ApprovalHandler, is_approval_gated
from pegboard.calls.grants import GrantKey
from pegboard.calls.request import arguments_fingerprint
from pegboard.calls.session import Call, CallSession
from pegboard.core.access import AccessView
from pegboard.core.definition import canonical_json
from pegboard.core.entry import ToolEntry
from pegboard.core.names import TOOL_INVOKE
from pegboard.core.output import ToolOutput
from pegboard.core.principal import Principal
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ToolApplyScope
from pegboard.core.status import NamespaceStatus
from pegboard.core.tokens import TokenCounter
from pegboard.core.tool import ToolContext
from pegboard.core.tracing import tracing_on
from pegboard.errors import PegboardError
from pegboard.search.interface import SearchIndex
from pegboard.toolsets.base import ToolList, Toolset
from pegboard.toolsets.compose import ToolCaller, call_or_error, compose
from pegboard.toolsets.deferral import DeferralSettings, DeferralState, StatusSource
from pegboard.toolsets.registry import RegistryToolset

if TYPE_CHECKING:
    from pegboard.deferral.tool_exec import ExecSettings

logger = logging.getLogger("pegboard.toolsets")


def _signature(shown: Sequence[ToolEntry]) -> str:
    """What a listing's change is judged by: every name with its definition's hash."""
    return canonical_json(sorted([e.name, e.definition_hash] for e in shown))


Listener = Callable[[], None]


@dataclass(frozen=True)
class Deferral:
    """How a session defers (None in :class:`ToolSession`: never)."""

    context_window: int | None = None
    index: SearchIndex | None = None
    statuses: StatusSource | None = None
    tool_exec: ExecSettings | None = None
    counter: TokenCounter | None = None
    native_loading: bool = False
    sticky: bool = False


class ToolSession:
    """The tools one conversation or client connection sees and calls (module docstring)."""

    def __init__(
        self,
        registry: ToolRegistry,
        scope: Callable[[], ToolApplyScope],
        calls: CallSession | None = None,
        deferral: Deferral | None = None,
    ) -> None:
        self.registry = registry
        self.scope = scope
        self.calls = calls if calls is not None else CallSession()
        self.deferral = deferral
        self._statuses: Mapping[str, NamespaceStatus] | None = None
        self._state = DeferralState(sticky=deferral.sticky if deferral else False)
        settings = None
        if deferral is not None:
            settings = DeferralSettings(
                registry,
                context_window=deferral.context_window,
                session=self.calls,
                counter=deferral.counter,
                index=deferral.index,
                statuses=self._current_statuses if deferral.statuses else None,
                native_loading=deferral.native_loading,
                tool_exec=deferral.tool_exec,
            )
        self.toolset: Toolset = compose(RegistryToolset(registry), settings, state=self._state)
        self._composed = self.toolset  # what a listing's call plans stand in for
        self.tools = ToolList((), registry.snapshot())
        # The listing the last refresh compared against, and its signature once computed: a
        # first listing always counts as a change, so its signature waits for a second
        # refresh (a read command lists once and never pays for it).
        self._shown: tuple[ToolEntry, ...] | None = None
        self._signature: str | None = None
        self._listeners: list[Listener] = []

    # -- listing -----------------------------------------------------------------------------
    def _current_statuses(self) -> Mapping[str, NamespaceStatus]:
        if self._statuses is not None:
            return self._statuses
        source = self.deferral.statuses if self.deferral else None
        return source() if source else {}

    def refresh(
        self,
        *,
        context_window: int | None = None,
        statuses: Mapping[str, NamespaceStatus] | None = None,
    ) -> bool:
        """List the tools again (for ``context_window`` and ``statuses`` when given); True,
        and the listeners told, when the tools shown changed (a name, or any field of a
        definition)."""
        self._state.context_window = context_window
        self._statuses = statuses
        self.tools = self.toolset.list_tools(self.scope())
        self.tools.prepare()
        before, self._shown = self._shown, self.tools.shown
        if before is not None:
            previous = self._signature if self._signature is not None else _signature(before)
            self._signature = _signature(self._shown)
            if self._signature == previous:
                return False
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:
                logger.exception("tool-list listener failed")
        return True

    @property
    def auto_deferred(self) -> bool:
        return self._state.sticky

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` whenever :meth:`refresh` changes the listing."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    # -- calls -------------------------------------------------------------------------------
    def context(
        self,
        call_id: str,
        *,
        session_id: str | None = None,
        messages: Sequence[Any] = (),
        call_session: CallSession | None = None,
    ) -> ToolContext:
        return ToolContext(
            call_id=call_id,
            session_id=session_id or self.calls.session_id,
            messages=messages,
            scope=self.scope(),
            call_session=call_session,
        )

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        call_id: str,
        *,
        via: str,
        tools: ToolList | None = None,
        session_id: str | None = None,
        client: str | None = None,
        approval: ApprovalHandler | Literal["session"] | None = "session",
        messages: Sequence[Any] = (),
        unparsable: str | None = None,
        raising: tuple[type[PegboardError], ...] = (),
        principal: Principal | None = None,
        grant_ttl: float | None = None,
        access: AccessView | None = None,
    ) -> ToolOutput:
        """Run one call of ``tools`` (the listing the model was given; default: the current
        one) and return what the model reads: a pegboard error becomes the error output
        (:func:`~pegboard.toolsets.call_or_error`) unless it is one of ``raising``.

        ``via`` names the route; ``session_id`` the client connection (default: this
        session's) and ``client`` its name (for the audit record); ``approval`` the handler
        that asks about this call (default: the session's); ``unparsable`` is why the
        arguments could not be read (the call is refused and audited like any other);
        ``principal`` who calls (default: the session's); ``grant_ttl`` how long a yes "for
        this session" lasts (default: the session's); ``access`` what that principal may use
        (default: the session's; pass ``tools`` narrowed to it too).
        """
        listing = tools if tools is not None else self.tools
        # isinstance, not ==: a handler that is a dataclass would be asked its __eq__
        handler = self.calls.approval_handler if isinstance(approval, str) else approval
        calls = self.calls
        session = calls.for_call(
            approval_handler=handler,
            session_id=session_id or calls.session_id,
            client=client or calls.client,
            principal=principal or calls.principal,
            grant_ttl=grant_ttl if grant_ttl is not None else calls.grant_ttl,
            access=access if access is not None else calls.access,
        )
        ctx = self.context(
            call_id, session_id=session.session_id, messages=messages, call_session=session
        )
        call = Call(name, dict(arguments), ctx, via, session)
        call.unparsable = unparsable
        toolset: ToolCaller = self.toolset
        # The tool's prepared plan runs the composed toolset's steps for it, unless the
        # toolset was replaced or spans are recorded (each wrapper's span is its own).
        if toolset is self._composed and not tracing_on():
            toolset = listing.plan(name) or toolset
        return await call_or_error(toolset, listing, call, raising=raising)

    async def pending_gate(
        self,
        name: str,
        arguments: Mapping[str, Any],
        call_id: str,
        *,
        tools: ToolList | None = None,
    ) -> str | None:
        """The tool whose approval ``call_id`` still needs before it can run (the called
        tool, or the one ``tool_invoke`` would run), or None when nothing has to be asked
        (ungated, or granted earlier in this session). The policy is evaluated here once:
        the call itself reuses the answer."""
        listing = tools if tools is not None else self.tools
        target, args, gated_id = name, dict(arguments), call_id
        if name == TOOL_INVOKE and isinstance(arguments.get("name"), str):
            target = str(arguments["name"])
            params = arguments.get("params")
            args = dict(params) if isinstance(params, Mapping) else {}
            gated_id = f"{call_id}::{target}"
        entry = listing.get(target)
        if entry is None:
            return None
        gated = await is_approval_gated(entry.tool, args, self.context(gated_id))
        self.calls.gates[gated_id] = gated
        if not gated:
            return None
        key = GrantKey(
            self.calls.principal.subject,
            entry.name,
            entry.definition_hash,
            arguments_fingerprint(args),
        )
        if await self.calls.grants.find(key, self.calls.session_id) is not None:
            return None
        return target

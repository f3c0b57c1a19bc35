"""Per-server status, as the CLI, the gateway and the deferred-tools prompt show it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pegboard.core.names import mcp_namespace
from pegboard.core.scope import AssistantSettings
from pegboard.core.status import NamespaceStatus

ServerState = Literal["cold", "connecting", "connected", "failed", "disabled"]


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """Where one server stands.

    ``state`` is ``cold`` (never listed), ``connecting``, ``connected``, ``failed`` (``error``
    says why, ``at`` when) or ``disabled``. ``tool_count`` counts the cached, enabled tools the
    catalog serves, whatever the state; ``fetched_at`` is the unix time of that list.
    ``pending_trust`` names tools hidden until ``pegboard tools trust`` accepts their changed
    definition; ``launch_changed`` says the whole server waits (its command, args, env, url
    or headers changed). ``gate_error`` says an approval gate (``force_prompt_tools``) names
    no tool the server lists. ``flags`` are poisoning heuristics per tool (they gate nothing),
    checked when first read from ``tool_flags`` (a status read for its state, as the gateway's
    deferred-tools prompt reads it at every start, checks no definition).
    ``refused`` names the tools listed under a name pegboard refuses, with the reason.
    ``backoff_until`` is when the next automatic attempt may start after a failure.
    """

    server_id: str
    name: str
    state: ServerState
    error: str | None = None
    at: float | None = None
    tool_count: int = 0
    fetched_at: float | None = None
    pending_trust: tuple[str, ...] = ()
    launch_changed: bool = False
    gate_error: str | None = None
    tool_flags: Mapping[str, Sequence[str]] = field(default_factory=dict, hash=False)
    refused: tuple[tuple[str, str], ...] = ()
    backoff_until: float | None = None

    @property
    def flags(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """``(tool name, its flags)`` of the flagged tools, by name."""
        return tuple((name, tuple(f)) for name, f in sorted(self.tool_flags.items()))

    @property
    def label(self) -> str:
        """One short line: ``failed (connection refused)``, ``connected``,
        ``connected (error: force_prompt_tools lists ...)``."""
        if self.error and self.state == "failed":
            return f"{self.state} ({self.error})"
        return f"{self.state} (error: {self.gate_error})" if self.gate_error else self.state


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """What one replica of a team store saw of one server (its row in ``servers status``):
    the replica's name, host and pid, its last heartbeat (``seen_at``; ``stale`` past the
    limit), and that server's state, error, backoff, tool count and last listing there."""

    replica: str
    host: str
    pid: int
    seen_at: float
    server_id: str
    state: str
    error: str | None = None
    error_at: float | None = None
    backoff_until: float | None = None
    tool_count: int = 0
    fetched_at: float | None = None
    stale: bool = False


def namespace_statuses(
    statuses: Iterable[ServerStatus], settings: AssistantSettings | None = None
) -> dict[str, NamespaceStatus]:
    """The deferred-tools prompt's view of the servers: keyed by namespace (``mcp:<id>``),
    labelled by display name (ids stay internal, in the error text too).

    With ``settings``, servers the profile cannot use are left out: all of them in
    ``disabled`` mode, those not linked to the profile in ``manual`` mode.
    """
    found = {}
    for status in statuses:
        if settings is not None and not (
            settings.mcp_mode == "auto"
            or (settings.mcp_mode == "manual" and status.server_id in settings.mcp_server_ids)
        ):
            continue
        detail = status.error.replace(status.server_id, status.name) if status.error else None
        state: str = status.state
        if state in ("cold", "connecting") and status.fetched_at is not None:
            # Not started yet (every gateway start) but listed before: its cached tools are
            # served and callable (a call starts it), so the model is told nothing is wrong.
            state = "cached"
        found[mcp_namespace(status.server_id)] = NamespaceStatus(
            mcp_namespace(status.name), state, detail
        )
    return found

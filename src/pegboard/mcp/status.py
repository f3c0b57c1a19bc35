"""Per-server status, as the CLI, the gateway and the deferred-tools prompt show it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ServerState = Literal["cold", "connecting", "connected", "failed", "disabled"]


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """Where one server stands.

    ``state`` is ``cold`` (never listed), ``connecting``, ``connected``, ``failed`` (``error``
    says why, ``at`` when) or ``disabled``. ``tool_count`` counts the cached, enabled tools the
    catalog serves, whatever the state; ``fetched_at`` is the unix time of that list.
    ``pending_trust`` names tools hidden until ``pegboard tools trust`` accepts their changed
    definition; ``launch_changed`` says the whole server waits (its command, args, env, url
    or headers changed). ``flags`` are poisoning heuristics per tool (they gate nothing).
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
    flags: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def label(self) -> str:
        """One short line: ``failed (connection refused)``, ``connected``."""
        return (
            f"{self.state} ({self.error})" if self.error and self.state == "failed" else self.state
        )

"""One in-process event bus: who changed what, told to whoever subscribed to that kind.

Publishers (the MCP catalog, the registry, the exposed surface, the call path) publish frozen
event values; subscribers pick the event types they want. Delivery is synchronous, on the
publisher's thread, in subscription order, so a subscriber sees a change before the publisher
goes on; a subscriber that raises is logged and the others still run. A second process (a
gateway replica) learns of shared changes through the store's change feed, not through this
bus: this is the one place in-process observers hang off.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

logger = logging.getLogger("pegboard.events")

E = TypeVar("E")


@dataclass(frozen=True, slots=True)
class ToolsChanged:
    """A server's cached tool list (or what of it is visible) changed."""

    server_id: str


@dataclass(frozen=True, slots=True)
class ServerStatusChanged:
    """A server's state, or its error, changed."""

    server_id: str


@dataclass(frozen=True, slots=True)
class ContentChanged:
    """A server's resources or prompts changed: the server said so (list them again), or,
    with ``stored``, another process (a replica) stored the new lists (they are read from the
    store: nothing to ask the server)."""

    server_id: str
    stored: bool = False


@dataclass(frozen=True, slots=True)
class RegistryChanged:
    """A registry's entries changed; ``snapshot`` is the new one (a ``RegistrySnapshot``)."""

    source: object
    snapshot: Any


@dataclass(frozen=True, slots=True)
class ToolListChanged:
    """The tool list a surface exposes changed (``source``: that surface)."""

    source: object


@dataclass(frozen=True, slots=True)
class CallFinished:
    """A tool call ended and was audited; ``record`` is its ``CallRecord``."""

    record: Any


@dataclass(frozen=True, slots=True)
class ApprovalPending:
    """A gated call waits for a decision; ``approval`` describes it (id, tool, who asks)."""

    approval: Any


@dataclass(frozen=True, slots=True)
class ApprovalDecided:
    """A pending approval was decided; ``approval`` carries the decision and who took it."""

    approval: Any


@dataclass(frozen=True, slots=True)
class McpRequestHandled:
    """The gateway answered an MCP request: its method and the client's era
    (``handshake`` or ``modern``)."""

    method: str
    era: str


class EventBus:
    """Subscribe to event types, publish events (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: dict[type, tuple[Callable[[Any], None], ...]] = {}

    def subscribe(self, kind: type[E], callback: Callable[[E], None]) -> Callable[[], None]:
        """Call ``callback(event)`` for each published ``kind``; returns the unsubscribe."""
        with self._lock:
            self._subscribers[kind] = (*self._subscribers.get(kind, ()), callback)

        def unsubscribe() -> None:
            with self._lock:
                current = list(self._subscribers.get(kind, ()))
                if callback in current:
                    current.remove(callback)
                    self._subscribers[kind] = tuple(current)

        return unsubscribe

    def publish(self, event: object) -> None:
        for callback in self._subscribers.get(type(event), ()):
            try:
                callback(event)
            except Exception:
                logger.exception("%s subscriber failed", type(event).__name__)

    def subscribers(self, kind: type) -> int:
        """How many callbacks ``kind`` has (for tests and the admin view)."""
        return len(self._subscribers.get(kind, ()))

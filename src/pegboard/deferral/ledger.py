"""The per-session inspect ledger: which tools the model has seen the signature of.

It lives as long as the conversation (not one request), so a tool inspected in turn 1 is
still known in turn 5. An entry is bound to the definition hash it was inspected at: if the
tool's schema changes, it counts as not inspected again.
"""

from __future__ import annotations

import threading

from pegboard.core.entry import ToolEntry


class InspectLedger:
    """Thread-safe set of (tool name, definition hash) the model has inspected."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, str] = {}

    def record(self, entry: ToolEntry) -> None:
        with self._lock:
            self._seen[entry.name] = entry.definition_hash

    def has_seen(self, entry: ToolEntry) -> bool:
        """True if the model inspected this exact definition of the tool."""
        with self._lock:
            return self._seen.get(entry.name) == entry.definition_hash

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._seen

    def names(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._seen)

    def __len__(self) -> int:
        return len(self._seen)

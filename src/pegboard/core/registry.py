"""The tool registry: entries by wire name, with snapshots safe to read while others write."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pegboard.core.entry import ToolEntry, ToolSource
from pegboard.core.events import EventBus, RegistryChanged
from pegboard.core.names import legacy_mcp_tool_name
from pegboard.core.scope import ToolApplyScope
from pegboard.core.tool import Tool

logger = logging.getLogger("pegboard.registry")

RegistryListener = Callable[["RegistrySnapshot"], None]


@dataclass(frozen=True, slots=True)
class NameCollision:
    """Two different tool identities wanted one wire name."""

    name: str
    kept: ToolSource | None
    replaced: ToolSource | None


def _matches(entry: ToolEntry, query: str | None, namespace: str | None) -> bool:
    if namespace is not None and namespace not in (entry.namespace, entry.label):
        return False
    if query:
        needle = query.casefold()
        haystack = (entry.name, entry.summary, entry.namespace, entry.label)
        if not any(needle in field.casefold() for field in haystack):
            return False
    return True


class RegistrySnapshot:
    """An immutable view of the registry at one version."""

    __slots__ = ("_aliases", "_by_source", "_entries", "version")

    def __init__(self, entries: Mapping[str, ToolEntry], version: int) -> None:
        self._entries = MappingProxyType(dict(sorted(entries.items())))
        self._by_source = {e.source: e.name for e in self._entries.values() if e.source}
        # Names MCP tools had before hyphens were kept in wire names, so a client's cached
        # list, a config list or an approval that uses one still finds the tool.
        self._aliases = {
            legacy: e.name
            for e in self._entries.values()
            if e.source
            and (legacy := legacy_mcp_tool_name(e.source.server_id, e.source.tool_name)) != e.name
            and legacy not in self._entries
        }
        self.version = version

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def get(self, name: str) -> ToolEntry | None:
        """The entry named ``name``, or the one that had that (pre-hyphen) name before."""
        return self._entries.get(name) or self._entries.get(self._aliases.get(name, ""))

    def canonical(self, name: str) -> str:
        """``name``, or the current name of the tool ``name`` used to be (see :meth:`get`)."""
        return self._aliases.get(name, name)

    def entries(self) -> list[ToolEntry]:
        return list(self._entries.values())

    def names(self) -> list[str]:
        return list(self._entries)

    def get_all(self, query: str | None = None, namespace: str | None = None) -> list[ToolEntry]:
        return [e for e in self._entries.values() if _matches(e, query, namespace)]

    def source_of(self, name: str) -> ToolSource | None:
        entry = self.get(name)
        return entry.source if entry else None

    def name_for(self, source: ToolSource) -> str | None:
        return self._by_source.get(source)


class ToolRegistry:
    """Tools by wire name.

    Writers copy-on-write under a lock; readers take :meth:`snapshot` (or call the read
    methods, which use the current snapshot) and never see a half-applied change.
    """

    def __init__(
        self, entries: Iterable[ToolEntry | Tool] = (), *, events: EventBus | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._snapshot = RegistrySnapshot({}, 0)
        self.events = events if events is not None else EventBus()
        self.collisions: list[NameCollision] = []
        self.register_many(entries)

    # -- writes -------------------------------------------------------------------------------
    def register(self, entry: ToolEntry | Tool) -> None:
        """Add ``entry``, replacing any entry of the same name."""
        self.register_many([entry])

    def register_many(self, entries: Iterable[ToolEntry | Tool]) -> None:
        """Add ``entries``; a :class:`Tool` stands for ``ToolEntry.of(tool)`` (it carries its
        name and namespace)."""
        batch = [e if isinstance(e, ToolEntry) else ToolEntry.of(e) for e in entries]
        if not batch:
            return
        with self._lock:
            current = dict(self._snapshot._entries)
            for entry in batch:
                old = current.get(entry.name)
                if old is not None and old.source != entry.source and (old.source or entry.source):
                    collision = NameCollision(entry.name, kept=entry.source, replaced=old.source)
                    self.collisions.append(collision)
                    logger.warning(
                        "wire name %s was claimed by %s and is now taken by %s",
                        entry.name,
                        old.source,
                        entry.source,
                    )
                current[entry.name] = entry
            snap = self._publish(current)
        self._notify(snap)

    def deregister(self, name: str) -> bool:
        """Remove the entry called ``name``; True if there was one."""
        return self.deregister_many([name]) == 1

    def deregister_many(self, names: Iterable[str]) -> int:
        with self._lock:
            current = dict(self._snapshot._entries)
            removed = sum(1 for name in set(names) if current.pop(name, None) is not None)
            if not removed:
                return 0
            snap = self._publish(current)
        self._notify(snap)
        return removed

    def _publish(self, entries: dict[str, ToolEntry]) -> RegistrySnapshot:
        self._snapshot = RegistrySnapshot(entries, self._snapshot.version + 1)
        return self._snapshot

    # -- change listeners ---------------------------------------------------------------------
    def subscribe(self, listener: RegistryListener) -> Callable[[], None]:
        """Call ``listener(snapshot)`` after every change; returns an unsubscribe function."""

        def deliver(event: RegistryChanged) -> None:
            if event.source is self:
                listener(event.snapshot)

        return self.events.subscribe(RegistryChanged, deliver)

    def _notify(self, snap: RegistrySnapshot) -> None:
        self.events.publish(RegistryChanged(self, snap))

    # -- reads --------------------------------------------------------------------------------
    def snapshot(self) -> RegistrySnapshot:
        return self._snapshot

    @property
    def version(self) -> int:
        return self._snapshot.version

    def __len__(self) -> int:
        return len(self._snapshot)

    def get_by_name(self, name: str) -> ToolEntry | None:
        return self._snapshot.get(name)

    def has(self, name: str) -> bool:
        return name in self._snapshot

    def get_all(self, query: str | None = None, namespace: str | None = None) -> list[ToolEntry]:
        """Entries sorted by name; ``query`` is a case-insensitive substring, filters AND-ed."""
        return self._snapshot.get_all(query=query, namespace=namespace)

    def get_by_namespace(
        self, query: str | None = None, namespace: str | None = None
    ) -> dict[str, list[ToolEntry]]:
        """Entries grouped by namespace label (labels sorted, entries sorted by name)."""
        groups: dict[str, list[ToolEntry]] = {}
        for entry in self.get_all(query=query, namespace=namespace):
            groups.setdefault(entry.label, []).append(entry)
        return dict(sorted(groups.items()))

    def select_active(self, scope: ToolApplyScope) -> list[ToolEntry]:
        """Entries whose ``applies(scope)`` holds (or that have none), sorted by name.

        An ``applies`` that raises is logged and the entry treated as inactive.
        """
        active = []
        for entry in self._snapshot.entries():
            if entry.applies is None:
                active.append(entry)
                continue
            try:
                if entry.applies(scope):
                    active.append(entry)
            except Exception as exc:
                logger.warning(
                    "applies() of tool %s raised %r; treating it as inactive", entry.name, exc
                )
        return active

    def resolve_source(self, name: str) -> ToolSource | None:
        """(server id, original tool name) behind an MCP wire name, from the id map."""
        return self._snapshot.source_of(name)

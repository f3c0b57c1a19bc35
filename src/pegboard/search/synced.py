"""One search index per registry, kept up to date incrementally as the registry changes.

The index covers the whole registry; each request narrows it to its deferred pool with the
``allowed`` filter of :meth:`SearchIndex.search`, so a request never pays for an index build.
A change upserts only the entries whose object changed and removes only the names that went.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pegboard.core.entry import ToolEntry
from pegboard.core.registry import RegistrySnapshot, ToolRegistry
from pegboard.search.interface import SearchHit, SearchIndex

IndexFactory = Callable[[], SearchIndex]


class SyncedIndex:
    """A :class:`SearchIndex` that follows one registry's snapshots."""

    def __init__(self, registry: ToolRegistry, index: SearchIndex) -> None:
        self.index = index
        self._lock = threading.Lock()
        self._entries: dict[str, ToolEntry] = {}
        self._version = -1
        self._unsubscribe = registry.subscribe(self.apply)
        self.apply(registry.snapshot())

    @property
    def version(self) -> int:
        """The registry version the index reflects."""
        return self._version

    def apply(self, snapshot: RegistrySnapshot) -> None:
        """Bring the index to ``snapshot`` (older snapshots arriving late are ignored)."""
        with self._lock:
            if snapshot.version <= self._version:
                return
            fresh = {e.name: e for e in snapshot.entries()}
            gone = [name for name in self._entries if name not in fresh]
            changed = [e for name, e in fresh.items() if self._entries.get(name) is not e]
            if gone:
                self.index.remove(gone)
            if changed:
                self.index.upsert(changed)
            self._entries = fresh
            self._version = snapshot.version

    def close(self) -> None:
        self._unsubscribe()


_indexes: weakref.WeakKeyDictionary[ToolRegistry, SyncedIndex] = weakref.WeakKeyDictionary()
_indexes_lock = threading.Lock()


def registry_index(registry: ToolRegistry, factory: IndexFactory | None = None) -> SearchIndex:
    """The shared index of ``registry``, built on first use (default ranker unless
    ``factory`` is given on that first call) and updated on every registry change."""
    with _indexes_lock:
        synced = _indexes.get(registry)
        if synced is None:
            if factory is None:
                from pegboard.search import default_index

                factory = default_index
            synced = SyncedIndex(registry, factory())
            _indexes[registry] = synced
    return synced.index


class LazyRegistryIndex:
    """:func:`registry_index` of ``registry`` with ``factory``, built on its first use.

    What a composition root hands out: listing tools (``pegboard tools list``) never loads the
    ranker (numpy, embeddings) nor indexes the registry; the first search does.
    """

    def __init__(self, registry: ToolRegistry, factory: IndexFactory) -> None:
        self._registry = registry
        self._factory = factory

    def _index(self) -> SearchIndex:
        return registry_index(self._registry, self._factory)

    def upsert(self, entries: Iterable[ToolEntry]) -> None:
        self._index().upsert(entries)

    def remove(self, names: Iterable[str]) -> None:
        self._index().remove(names)

    def __len__(self) -> int:
        return len(self._index())

    def plan(self) -> dict[str, Any] | None:
        """The shared index's :meth:`~pegboard.search.stored.StoredIndex.plan`, if it has one."""
        planned = getattr(self._index(), "plan", None)
        return planned() if callable(planned) else None

    def search(
        self,
        queries: Sequence[str],
        *,
        limit: int = 8,
        namespaces: Sequence[str] | None = None,
        allowed: frozenset[str] | None = None,
    ) -> list[SearchHit]:
        return self._index().search(queries, limit=limit, namespaces=namespaces, allowed=allowed)

from collections.abc import Iterable, Sequence

from pegboard.core.entry import ToolEntry
from pegboard.core.registry import ToolRegistry
from pegboard.search.interface import SearchHit
from pegboard.search.synced import SyncedIndex, registry_index
from tests.deferral.factories import entry


class RecordingIndex:
    """A SearchIndex that records what it is asked to change."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.log: list[tuple[str, list[str]]] = []

    def upsert(self, entries: Iterable[ToolEntry]) -> None:
        batch = sorted(e.name for e in entries)
        self.names.update(batch)
        self.log.append(("upsert", batch))

    def remove(self, names: Iterable[str]) -> None:
        batch = sorted(names)
        self.names.difference_update(batch)
        self.log.append(("remove", batch))

    def __len__(self) -> int:
        return len(self.names)

    def search(
        self,
        queries: Sequence[str],
        *,
        limit: int = 8,
        namespaces: Sequence[str] | None = None,
        allowed: frozenset[str] | None = None,
    ) -> list[SearchHit]:
        return []


def test_only_changed_entries_are_upserted_and_only_gone_names_removed() -> None:
    registry = ToolRegistry([entry("a"), entry("b"), entry("c")])
    index = RecordingIndex()
    SyncedIndex(registry, index)
    registry.register(entry("b", description="A new description."))
    registry.deregister("c")
    registry.register_many([entry("d"), entry("e")])
    assert index.log == [
        ("upsert", ["a", "b", "c"]),
        ("upsert", ["b"]),
        ("remove", ["c"]),
        ("upsert", ["d", "e"]),
    ]
    assert index.names == {"a", "b", "d", "e"}


def test_a_snapshot_arriving_late_is_ignored() -> None:
    registry = ToolRegistry([entry("a")])
    old = registry.snapshot()
    index = RecordingIndex()
    synced = SyncedIndex(registry, index)
    registry.register(entry("b"))
    synced.apply(old)
    assert synced.version == registry.version
    assert index.names == {"a", "b"}


def test_closing_stops_following_the_registry() -> None:
    registry = ToolRegistry([entry("a")])
    index = RecordingIndex()
    synced = SyncedIndex(registry, index)
    synced.close()
    registry.register(entry("b"))
    assert index.names == {"a"}


def test_each_registry_gets_its_own_shared_index_from_the_factory_given_first() -> None:
    first, second = ToolRegistry([entry("a")]), ToolRegistry([entry("b")])
    made: list[RecordingIndex] = []

    def factory() -> RecordingIndex:
        made.append(RecordingIndex())
        return made[-1]

    assert registry_index(first, factory) is made[0]
    assert registry_index(first, factory) is made[0]
    assert registry_index(second, factory) is made[1]
    assert (made[0].names, made[1].names) == ({"a"}, {"b"})

"""The search index interface behind ``tool_search``.

An index holds the *searchable* view of tool entries and ranks them for one or more queries.
Implementations must be incremental (``upsert``/``remove`` without a full rebuild) and safe to
query while another task updates them (readers work on an immutable state).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pegboard.core.entry import ToolEntry


@dataclass(frozen=True, slots=True)
class SearchHit:
    name: str
    score: float


@runtime_checkable
class SearchIndex(Protocol):
    """Ranked retrieval over tool entries."""

    def upsert(self, entries: Iterable[ToolEntry]) -> None:
        """Add entries or replace those whose name is already indexed."""
        ...

    def remove(self, names: Iterable[str]) -> None:
        """Drop entries by wire name; unknown names are ignored."""
        ...

    def __len__(self) -> int: ...

    def search(
        self,
        queries: Sequence[str],
        *,
        limit: int = 8,
        namespaces: Sequence[str] | None = None,
        allowed: frozenset[str] | None = None,
    ) -> list[SearchHit]:
        """Best hits first for ``queries``; several queries (phrasings of one need, or
        different needs) are merged so that each query's best hits come first.

        ``namespaces`` restricts to entries whose namespace or label is listed; ``allowed``
        restricts to those wire names. Results are deterministic for equal inputs.
        """
        ...

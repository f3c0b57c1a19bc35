"""The audit log: one record per tool call, whatever the route."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pegboard.calls.audit_log import AUDIT_FILE, AuditLog
from pegboard.config import LoadedConfig

SCAN_LIMIT = 50_000  # records read for a filtered query (the rotated log holds ~20 MB)


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """Which records: substring of the tool, exact outcome and principal, since a time."""

    tool: str = ""
    outcome: str = ""
    principal: str = ""
    since: float | None = None


@dataclass(frozen=True, slots=True)
class AuditPage:
    """One page of matching records, newest first, and how many matched in all."""

    records: list[dict[str, Any]]
    total: int
    page: int
    per_page: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))


class AuditService:
    """The audit log file of one config's data directory."""

    def __init__(self, loaded: LoadedConfig) -> None:
        self.log = AuditLog(loaded.data_dir / AUDIT_FILE)

    def tail(self, count: int) -> list[dict[str, Any]]:
        """The last ``count`` records, oldest first."""
        return self.log.tail(count)

    def query(self, query: AuditQuery, *, page: int = 1, per_page: int = 50) -> AuditPage:
        """The records matching ``query``, newest first, ``per_page`` at a time."""
        found = [r for r in reversed(self.log.tail(SCAN_LIMIT)) if _matches(r, query)]
        page = max(1, page)
        start = (page - 1) * per_page
        return AuditPage(found[start : start + per_page], len(found), page, per_page)


def _matches(record: dict[str, Any], query: AuditQuery) -> bool:
    if query.tool and query.tool.casefold() not in str(record.get("tool", "")).casefold():
        return False
    if query.outcome and str(record.get("outcome", "")) != query.outcome:
        return False
    if query.principal and str(record.get("principal", "anonymous")) != query.principal:
        return False
    stamp = record.get("time")
    return query.since is None or (isinstance(stamp, int | float) and stamp >= query.since)

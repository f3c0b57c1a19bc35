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
    """The audit of one config: the data directory's log file, or with a team store
    (``[store] url``) the audit table every replica writes."""

    def __init__(self, loaded: LoadedConfig) -> None:
        self.loaded = loaded
        self.log = AuditLog(loaded.data_dir / AUDIT_FILE)

    @property
    def where(self) -> str:
        """Where the records are, as a message shows it (credentials masked)."""
        url = self.loaded.store_url
        if url is None:
            return str(self.log.path)
        from pegboard.postgres import shown_url

        return f"the team store {shown_url(url)}"

    def tail(self, count: int) -> list[dict[str, Any]]:
        """The last ``count`` records, oldest first (with a team store: of every replica,
        each naming its ``replica``)."""
        url = self.loaded.store_url
        if url is None:
            return self.log.tail(count)
        from pegboard.calls.audit_pg import audit_tail  # lazy: psycopg is an extra
        from pegboard.postgres import Database

        database = Database(url)
        try:
            return audit_tail(database, count)
        finally:
            database.close()

    def query(self, query: AuditQuery, *, page: int = 1, per_page: int = 50) -> AuditPage:
        """The records matching ``query``, newest first, ``per_page`` at a time."""
        found = [r for r in reversed(self.tail(SCAN_LIMIT)) if _matches(r, query)]
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

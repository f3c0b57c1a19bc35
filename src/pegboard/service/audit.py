"""The audit log: one record per tool call, whatever the route."""

from __future__ import annotations

from typing import Any

from pegboard.calls.audit_log import AUDIT_FILE, AuditLog
from pegboard.config import LoadedConfig


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

"""The audit log: one record per tool call, whatever the route."""

from __future__ import annotations

from typing import Any

from pegboard.calls.audit_log import AUDIT_FILE, AuditLog
from pegboard.config import LoadedConfig


class AuditService:
    """The audit log file of one config's data directory."""

    def __init__(self, loaded: LoadedConfig) -> None:
        self.log = AuditLog(loaded.data_dir / AUDIT_FILE)

    def tail(self, count: int) -> list[dict[str, Any]]:
        """The last ``count`` records, oldest first."""
        return self.log.tail(count)

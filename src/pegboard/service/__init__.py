"""The application layer: what the CLI, the admin UI and any HTTP API call.

:class:`Service` opens one config's runtime on demand (from a factory, so a test or an embedder
injects its own components) and answers in plain values: servers and their statuses, what
waits for trust, collisions, refreshes, enabling and disabling, tools (list, search, inspect,
call), trust, approvals and the audit log. No caller reaches into the runtime's parts.
"""

from pegboard.service.app import RuntimeFactory, Service, default_runtime
from pegboard.service.servers import RefreshResult, ServerService
from pegboard.service.tools import ToolService

__all__ = [
    "RefreshResult",
    "RuntimeFactory",
    "ServerService",
    "Service",
    "ToolService",
    "default_runtime",
]

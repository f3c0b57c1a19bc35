"""The application layer: what the CLI, the admin UI and any HTTP API call.

:class:`Service` opens one config's runtime on demand (from a factory, so a test or an embedder
injects its own components) and answers in plain values: servers and their statuses, what
waits for trust, collisions, refreshes, enabling and disabling, tools (list, search, inspect,
call), trust, approvals, the audit log and who is an admin (:class:`AccessService`). No
caller reaches into the runtime's parts.
"""

from typing import TYPE_CHECKING

from pegboard._lazy import lazy_exports

# public name -> submodule, loaded on first use (PEP 562): importing one submodule does not
# import its siblings.
_EXPORTS = {
    "AccessService": "access",
    "RefreshResult": "servers",
    "RuntimeFactory": "app",
    "ServerService": "servers",
    "Service": "app",
    "ToolService": "tools",
    "default_runtime": "app",
}

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from pegboard.service.access import AccessService
    from pegboard.service.app import RuntimeFactory, Service, default_runtime
    from pegboard.service.servers import RefreshResult, ServerService
    from pegboard.service.tools import ToolService

__all__ = [
    "AccessService",
    "RefreshResult",
    "RuntimeFactory",
    "ServerService",
    "Service",
    "ToolService",
    "default_runtime",
]

"""Trust: accept a changed tool definition or a redefined server (``pegboard tools trust``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pegboard.core.names import mcp_tool_name
from pegboard.errors import PegboardError
from pegboard.mcp.trust import TrustOutcome, cached_definitions, trust_server, trust_tool
from pegboard.service.servers import UnknownServer

if TYPE_CHECKING:
    from pegboard.service.app import Service


class TrustService:
    """Pins in the catalog store of the runtime (nothing is started)."""

    def __init__(self, service: Service) -> None:
        self._service = service

    def trust_server(self, server_id: str) -> TrustOutcome:
        """Trust the server's launch definition and every cached tool definition."""
        servers = self._service.loaded.config.servers
        if server_id not in servers:
            known = ", ".join(sorted(servers)) or "none"
            raise UnknownServer(f"unknown server id {server_id!r}; configured: {known}")
        return trust_server(self._service.runtime.catalog.store, servers[server_id])

    def trust_tool(self, name: str) -> TrustOutcome:
        """Trust one cached tool (a wire name or ``<server id>/<tool>``) as now defined."""
        store = self._service.runtime.catalog.store
        for sid, server in self._service.loaded.config.servers.items():
            for tool in cached_definitions(store, server):
                if name in (f"{sid}/{tool}", mcp_tool_name(sid, server.name, tool)):
                    return trust_tool(store, server, tool)
        raise NotCached(
            f"no cached tool named {name!r}; use a wire name (mcp__srv__tool) or "
            "'<server id>/<tool>' (see `pegboard servers status` for what waits for trust)"
        )

    async def start_and_trust(self, server_id: str) -> tuple[int | None, str | None]:
        """Start a just-trusted server in a fresh runtime (it reads the new pins), cache its
        tools and trust them too: (tools listed, error). (None, None) for a disabled server."""
        import anyio.to_thread

        from pegboard.runtime import RuntimeOptions

        loaded = self._service.loaded
        if not loaded.config.servers[server_id].enabled:
            return None, None
        started = self._service.with_options(RuntimeOptions(prewarm=False))
        try:
            async with started.runtime.running():  # its stores are closed on the way out
                try:
                    await started.runtime.catalog.refresh_tools(server_id)
                except PegboardError as exc:
                    return None, str(exc)
                # A definition that changed along with the launch is accepted too (in the
                # same stores: once closed they refuse to be used).
                outcome = await anyio.to_thread.run_sync(started.trust.trust_server, server_id)
                return len(outcome.tools), None
        finally:
            started.close()


class NotCached(PegboardError):
    """No cached tool has that name (nothing to trust)."""

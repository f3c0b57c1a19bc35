"""A gateway over a runtime: its surface for tools, the upstream content for the rest."""

from __future__ import annotations

from pegboard.gateway.content import UpstreamContent
from pegboard.gateway.server import Gateway
from pegboard.mcp.spawn import Launch
from pegboard.mcp.transport import launch_of
from pegboard.runtime import ToolRuntime


def gateway_for(runtime: ToolRuntime) -> tuple[Gateway, UpstreamContent]:
    """The gateway serving ``runtime``'s profile, and the resources and prompts of the
    servers that profile allows (run ``content.run(gateway.content_changed)`` beside it)."""
    servers = list(runtime.loaded.config.servers)
    content = UpstreamContent(
        runtime.catalog,
        lambda: [s for s in servers if runtime.server_allowed(s)],
        session=runtime.calls,
    )
    gateway = Gateway(
        runtime.surface, content=content, store=runtime.catalog.store, access=runtime.access
    )
    gateway.pages.pending = runtime.calls.pending
    return gateway, content


def stdio_launches(runtime: ToolRuntime) -> list[Launch]:
    """The stdio servers ``runtime``'s catalog starts at start-up (every enabled one), as
    the next start's early ``spawn`` plan (:mod:`pegboard.mcp.spawn`)."""
    catalog = runtime.catalog
    return [
        launch_of(server)
        for server in catalog.servers()
        if server.transport == "stdio" and catalog.is_active(server.id)
    ]

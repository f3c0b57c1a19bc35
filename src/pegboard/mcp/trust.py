"""Accepting changed tools or a redefined server (``pegboard tools trust``).

Works on the catalog store alone (no server is started): the pins become the hashes of the
cached definitions, and the running gateway picks them up at its next refresh of the server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pegboard.config.server import ServerConfig
from pegboard.errors import PegboardError
from pegboard.mcp.pins import LAUNCH, definition_hash, launch_pending
from pegboard.mcp.store import CatalogStore


@dataclass(slots=True)
class TrustOutcome:
    """What a trust call accepted."""

    server_id: str
    tools: list[str] = field(default_factory=list)
    launch: bool = False  # the server's new launch definition was accepted


def cached_definitions(store: CatalogStore, config: ServerConfig) -> dict[str, dict[str, Any]]:
    """The cached tool definitions of ``config``'s server that match its current launch."""
    record = store.get(config.id)
    if record is None or record.tools is None or record.fingerprint != config.fingerprint:
        return {}
    return {str(t.get("name")): dict(t) for t in record.tools if isinstance(t, dict)}


def trust_server(store: CatalogStore, config: ServerConfig) -> TrustOutcome:
    """Trust the server's launch definition and every cached tool definition.

    With nothing cached under the current launch (a redefined server, not listed since), the
    pins are cleared: the next listing is a first listing, trusted on sight as for a newly
    added server (unless a gate names no listed tool, see :mod:`pegboard.mcp.pins`)."""
    launch = launch_pending(store.pins(config.id), config.fingerprint)
    hashes = {n: definition_hash(t) for n, t in cached_definitions(store, config).items()}
    pins = {LAUNCH: config.fingerprint, **hashes} if hashes else {}
    store.set_pins(config.id, pins, replace=True)
    return TrustOutcome(config.id, sorted(hashes), launch)


def trust_tool(store: CatalogStore, config: ServerConfig, tool_name: str) -> TrustOutcome:
    """Trust one cached tool's current definition."""
    if launch_pending(store.pins(config.id), config.fingerprint):
        raise PegboardError(
            f"MCP server {config.id}'s launch definition changed; review it with "
            f"`pegboard servers list` and trust it first: pegboard tools trust --server {config.id}"
        )
    definitions = cached_definitions(store, config)
    if tool_name not in definitions:
        raise PegboardError(
            f"no cached tool {tool_name!r} on MCP server {config.id}; "
            f"run `pegboard servers refresh {config.id}` first"
        )
    store.set_pins(config.id, {tool_name: definition_hash(definitions[tool_name])})
    return TrustOutcome(config.id, [tool_name])

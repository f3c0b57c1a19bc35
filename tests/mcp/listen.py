"""Subscribing a plain ``callback(server_id)`` to a catalog's event bus."""

from __future__ import annotations

from collections.abc import Callable

from pegboard.core.events import ServerStatusChanged, ToolsChanged
from pegboard.mcp import McpCatalog


def on_tools_changed(catalog: McpCatalog, callback: Callable[[str], object]) -> Callable[[], None]:
    return catalog.events.subscribe(ToolsChanged, lambda event: callback(event.server_id))


def on_status_changed(catalog: McpCatalog, callback: Callable[[str], object]) -> Callable[[], None]:
    return catalog.events.subscribe(ServerStatusChanged, lambda event: callback(event.server_id))

"""``pegboard tools trust NAME | --server ID``: accept changed tool definitions (pinning)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from pegboard.cli._common import EXIT_NOT_FOUND, EXIT_USAGE, fail, load
from pegboard.config import LoadedConfig
from pegboard.errors import PegboardError

if TYPE_CHECKING:
    from pegboard.core.entry import ToolEntry
    from pegboard.mcp.catalog import McpCatalog


def _find(loaded: LoadedConfig, name: str, store: object) -> tuple[str, str]:
    """(server id, tool name) of ``name``: ``<server id>/<tool>`` or a wire name."""
    from pegboard.core.names import mcp_tool_name
    from pegboard.mcp.trust import cached_definitions

    for sid, server in loaded.config.servers.items():
        for tool in cached_definitions(store, server):  # type: ignore[arg-type]
            if name in (f"{sid}/{tool}", mcp_tool_name(sid, server.name, tool)):
                return sid, tool
    fail(
        f"no cached tool named {name!r}; use a wire name (mcp__srv__tool) or '<server id>/<tool>'"
        " (see `pegboard servers status` for what waits for trust)",
        EXIT_NOT_FOUND,
    )


def flag_line(catalog: McpCatalog, entry: ToolEntry) -> str | None:
    """The one ``tools inspect`` line naming a tool's poisoning flags (None: unflagged)."""
    if entry.source is None:
        return None
    found = catalog.flags(entry.source.server_id).get(entry.source.tool_name)
    if not found:
        return None
    return f"warning: possible hidden instructions ({', '.join(found)}); a flag approves nothing"


def trust(
    ctx: typer.Context,
    name: Annotated[
        str | None, typer.Argument(help="Tool to trust: wire name or '<server id>/<tool>'.")
    ] = None,
    server: Annotated[
        str | None,
        typer.Option("--server", help="Trust a whole server: its launch definition and tools."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Accept a changed tool definition or server launch definition.

    Use it for a tool whose definition changed or that appeared after the server's first
    listing, or a server whose command, url or env changed. pegboard pins each tool's
    definition (description, schemas, annotations) and each server's launch definition when
    first seen; a change or a new tool is hidden until you trust it here. Review first:
    `pegboard tools inspect NAME`, `servers list`.
    """
    from pegboard.mcp import SqliteCatalogStore
    from pegboard.mcp.trust import trust_server, trust_tool

    if (name is None) == (server is None):
        fail("give a tool NAME or --server ID (one of them)", EXIT_USAGE)
    loaded = load(ctx)
    store = SqliteCatalogStore(loaded.catalog_path)
    try:
        if server is not None:
            if server not in loaded.config.servers:
                known = ", ".join(sorted(loaded.config.servers)) or "none"
                fail(f"unknown server id {server!r}; configured: {known}", EXIT_NOT_FOUND)
            outcome = trust_server(store, loaded.config.servers[server])
        else:
            assert name is not None
            sid, tool = _find(loaded, name, store)
            outcome = trust_tool(store, loaded.config.servers[sid], tool)
    except PegboardError as exc:
        fail(str(exc))
    finally:
        store.close()
    if as_json:
        payload = {"server": outcome.server_id, "tools": outcome.tools, "launch": outcome.launch}
        typer.echo(json.dumps(payload))
        return
    what = f"{len(outcome.tools)} tool(s)" + (
        " and its launch definition" if outcome.launch else ""
    )
    typer.echo(f"trusted {what} of MCP server {outcome.server_id}")

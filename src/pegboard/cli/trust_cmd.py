"""``pegboard tools trust NAME | --server ID``: accept changed tool definitions (pinning)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from pegboard.cli._common import EXIT_NOT_FOUND, EXIT_USAGE, fail, load
from pegboard.config import LoadedConfig
from pegboard.core.wording import plural
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
    listed: int | None = None
    error: str | None = None
    if server is not None:
        # One command: the server starts now and lists its tools (all trusted with it), so
        # status and calls are right at once instead of after a `servers refresh`.
        listed, error = _start(loaded, server)
    if as_json:
        payload = {"server": outcome.server_id, "tools": outcome.tools, "launch": outcome.launch}
        if server is not None:
            payload |= {"listed": listed, "error": error}
        typer.echo(json.dumps(payload))
    else:
        typer.echo(_trusted_line(outcome.server_id, len(outcome.tools), outcome.launch, listed))
    if error is not None:
        fail(f"{error} (see `pegboard servers logs {server}`)")


def _trusted_line(server_id: str, pinned: int, launch: bool, listed: int | None) -> str:
    if listed is None:
        what = plural(pinned, "tool") + (" and its launch definition" if launch else "")
        return f"trusted {what} of MCP server {server_id}"
    what = "the launch definition and tools" if launch else "the tools"
    return f"trusted {what} of MCP server {server_id}; it lists {plural(listed, 'tool')}"


def _start(loaded: LoadedConfig, server_id: str) -> tuple[int | None, str | None]:
    """Start the just-trusted server, cache its tools and trust them too: (count, error)."""
    from pegboard.cli._common import run
    from pegboard.mcp import SqliteCatalogStore
    from pegboard.mcp.trust import trust_server
    from pegboard.runtime import RuntimeOptions, ToolRuntime

    if not loaded.config.servers[server_id].enabled:
        return None, None
    runtime = ToolRuntime(loaded, RuntimeOptions(prewarm=False))

    async def body() -> tuple[int | None, str | None]:
        async with runtime.running():
            try:
                return len(await runtime.catalog.refresh_tools(server_id)), None
            except PegboardError as exc:
                return None, str(exc)

    listed, error = run(body)
    if error is None:  # a definition that changed along with the launch is accepted too
        store = SqliteCatalogStore(loaded.catalog_path)
        try:
            listed = len(trust_server(store, loaded.config.servers[server_id]).tools)
        finally:
            store.close()
    return listed, error

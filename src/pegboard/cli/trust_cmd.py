"""``pegboard tools trust NAME | --server ID``: accept changed tool definitions (pinning)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from pegboard.cli._common import EXIT_NOT_FOUND, EXIT_USAGE, fail, run, service
from pegboard.core.wording import plural
from pegboard.errors import PegboardError


def flag_line(flags: list[str]) -> str | None:
    """The one ``tools inspect`` line naming a tool's poisoning flags (None: unflagged)."""
    if not flags:
        return None
    return f"warning: possible hidden instructions ({', '.join(flags)}); a flag approves nothing"


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
    from pegboard.runtime import RuntimeOptions  # lazy: the catalog needs the SDK
    from pegboard.service.servers import UnknownServer
    from pegboard.service.trust import NotCached

    if (name is None) == (server is None):
        fail("give a tool NAME or --server ID (one of them)", EXIT_USAGE)
    services = service(ctx, RuntimeOptions(prewarm=False))
    try:
        if server is not None:
            outcome = services.trust.trust_server(server)
        else:
            assert name is not None
            outcome = services.trust.trust_tool(name)
    except (UnknownServer, NotCached) as exc:
        fail(str(exc), EXIT_NOT_FOUND)
    except PegboardError as exc:
        fail(str(exc))
    finally:
        services.close()
    listed: int | None = None
    error: str | None = None
    if server is not None:
        # One command: the server starts now and lists its tools (all trusted with it), so
        # status and calls are right at once instead of after a `servers refresh`.
        sid = server
        listed, error = run(lambda: services.trust.start_and_trust(sid))
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

"""``pegboard servers add`` / ``remove``: a ``[servers.<id>]`` table added or removed, keeping
the file's comments."""

from __future__ import annotations

import copy
import re
import shlex
from typing import Annotated, Any

import typer

from pegboard.cli._common import EXIT_NOT_FOUND, EXIT_USAGE, fail, load, service
from pegboard.config import write_config
from pegboard.errors import ConfigError

# Letters, digits, - and _: the id becomes the server segment of every wire name
# (mcp__<id>__<tool>) and is kept verbatim there only with these characters.
_SERVER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_FORBID_DOUBLE = "__"


def _check_id(server_id: str) -> None:
    if _SERVER_ID.match(server_id) and _FORBID_DOUBLE not in server_id:
        return
    suggestion = re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_-]+", "-", server_id)).strip("-_")
    hint = f", e.g. {suggestion!r}" if suggestion else ""
    fail(
        f"server id {server_id!r}: use letters, digits, '-' and single '_' (it becomes part "
        f"of every tool name){hint}",
        EXIT_USAGE,
    )


def _pairs(option: str, items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"{option} {item!r}: expected KEY=VALUE, e.g. {option} API_KEY=...", EXIT_USAGE)
        out[key.strip()] = value
    return out


def server_table(
    command: list[str], url: str | None, env: dict[str, str], headers: dict[str, str]
) -> dict[str, Any]:
    """The raw ``[servers.<id>]`` table for a stdio command or a remote URL (validated)."""
    if bool(command) == bool(url):
        raise ConfigError(
            "give either a command after -- (pegboard servers add ID -- npx -y PACKAGE) "
            "or --url URL, not both or neither"
        )
    if command and command[0].startswith("-"):
        raise ConfigError(
            f"unknown option {command[0]}; a server's own options go after its command, "
            "behind --: pegboard servers add ID -- COMMAND ARGS..."
        )
    table: dict[str, Any] = {}
    if url:
        if not re.match(r"^https?://", url):
            raise ConfigError(f"--url {url!r}: expected an http:// or https:// URL")
        if env:
            raise ConfigError("--env is for a stdio command; a remote server takes --header")
        table["url"] = url
        if headers:
            table["headers"] = headers
    else:
        if headers:
            raise ConfigError("--header is for a --url server; a stdio command takes --env")
        table["command"] = command[0]
        if command[1:]:
            table["args"] = command[1:]
        if env:
            table["env"] = env
    return table


def add_cmd(
    ctx: typer.Context,
    server_id: Annotated[
        str, typer.Argument(metavar="ID", help="New server id, e.g. github.", show_default=False)
    ],
    command: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="-- COMMAND [ARGS]",
            help="The stdio server's command line, after --.",
            show_default=False,
        ),
    ] = None,
    url: Annotated[
        str | None, typer.Option("--url", help="Endpoint of a remote (HTTP/SSE) server.")
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option("--header", metavar="K=V", help="HTTP header for --url (repeatable)."),
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option("--env", "-e", metavar="K=V", help="Environment variable (repeatable)."),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Display name.")] = None,
) -> None:
    """Add an MCP server to the config file.

    pegboard servers add time -- uvx mcp-server-time

    pegboard servers add docs --url https://example.com/mcp --header "Authorization=Bearer ..."

    The file's comments and layout are kept; an id that exists already is an error.
    """
    _check_id(server_id)
    loaded = load(ctx, may_create=True)
    if server_id in loaded.config.servers:
        fail(
            f"server {server_id!r} already exists in {loaded.path}; choose another id, or "
            f"edit or remove [servers.{server_id}] there",
            EXIT_USAGE,
        )
    try:
        table = server_table(
            command or [], url, _pairs("--env", env or []), _pairs("--header", header or [])
        )
        if name:
            table["name"] = name
        raw = copy.deepcopy(loaded.raw)
        raw.setdefault("servers", {})[server_id] = table
        write_config(loaded.path, raw)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    target = url or shlex.join(command or [])
    typer.echo(
        f"added {server_id} ({target}) to {loaded.path}; "
        f"list its tools with `pegboard servers refresh {server_id}`"
    )


def remove_cmd(
    ctx: typer.Context,
    server_id: Annotated[
        str, typer.Argument(metavar="ID", help="Server id to remove.", show_default=False)
    ],
) -> None:
    """Remove an MCP server from the config file.

    Its table goes, and its id from every profile's mcp_servers; the file's other comments
    and layout are kept. Its cached tools and trust pins are forgotten, so adding it again
    starts fresh. A running pegboard serve needs a restart to drop it.
    """
    from pegboard.runtime import RuntimeOptions
    from pegboard.service.servers import UnknownServer

    services = service(ctx, RuntimeOptions(prewarm=False))
    try:
        unlinked = services.servers.remove(server_id)
    except UnknownServer as exc:
        fail(str(exc), EXIT_NOT_FOUND)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    finally:
        services.close()
    also = f", unlinked from profile {', '.join(unlinked)}" if unlinked else ""
    typer.echo(f"removed {server_id} from {services.loaded.path}{also}")

"""Shared CLI plumbing: the global ``--config`` option, exit codes, JSON output, errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import anyio
import typer

from pegboard.config import LoadedConfig, load_config
from pegboard.errors import ConfigError, PegboardError

if TYPE_CHECKING:
    from pegboard.mcp.sync import McpCollision

# Exit codes: 0 success; 1 the operation failed (a tool error, an unreachable server);
# 2 bad usage or an invalid config; 3 the thing named does not exist.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3

T = TypeVar("T")


@dataclass(slots=True)
class CliState:
    config_path: str | None = None


def state(ctx: typer.Context) -> CliState:
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj


def fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    from rich.console import Console  # lazy: rich costs start-up time of every command
    from rich.markup import escape

    # Escaped: a message may quote config such as "[models.local]", which is not markup.
    Console(stderr=True).print(
        f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True
    )
    raise typer.Exit(code)


def load(ctx: typer.Context) -> LoadedConfig:
    """The config named by ``--config`` / ``$PEGBOARD_CONFIG`` / the default path."""
    try:
        return load_config(state(ctx).config_path)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)


def run(fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run an async command body; pegboard errors become a message and exit code 1."""
    try:
        return anyio.run(fn)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    except PegboardError as exc:
        fail(str(exc))


def echo_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2, default=str) + "\n")


def print_excluded(collisions: Sequence[McpCollision], server_ids: Sequence[str] = ()) -> None:
    """One stderr line per tool left out because several claim its wire name (stdout stays
    the table or the JSON). ``server_ids`` limits it to collisions touching those servers."""
    for collision in collisions:
        if server_ids and not any(s.server_id in server_ids for s in collision.sources):
            continue
        typer.echo(f"excluded: {collision.describe()}", err=True)

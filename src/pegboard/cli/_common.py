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
from pegboard.service.app import RuntimeFactory, Service, default_runtime

if TYPE_CHECKING:
    from pegboard.mcp.sync import McpCollision
    from pegboard.runtime import RuntimeOptions

# Exit codes: 0 success; 1 the operation failed (a tool error, an unreachable server);
# 2 bad usage or an invalid config; 3 the thing named does not exist.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3

T = TypeVar("T")


@dataclass(slots=True)
class CliState:
    """What the root command sets up for its subcommands. ``runtime_factory`` builds the
    runtime every command's service uses (a test passes its own: ``invoke(..., obj=...)``)."""

    config_path: str | None = None
    runtime_factory: RuntimeFactory = default_runtime


def state(ctx: typer.Context) -> CliState:
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj


def fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    """Print ``error: <message>`` (verbatim, never read as markup) and exit with ``code``."""
    from pegboard.cli.render import print_error

    print_error(message)
    raise typer.Exit(code)


def load(ctx: typer.Context, *, may_create: bool = False) -> LoadedConfig:
    """The config named by ``--config`` / ``$PEGBOARD_CONFIG`` / the default path.

    A missing file is the empty config, except one named by ``--config``: that is a typo
    until proven otherwise, so only commands that write the file (``may_create``) accept it.
    """
    explicit = state(ctx).config_path
    try:
        loaded = load_config(explicit)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    if explicit and not loaded.exists and not may_create:
        fail(
            f"--config {explicit}: no such file; check the path, create it with "
            f"`pegboard --config {explicit} servers add ...` or `config import`, or leave out "
            "--config to use $PEGBOARD_CONFIG or the default config",
            EXIT_USAGE,
        )
    return loaded


def service(ctx: typer.Context, options: RuntimeOptions | None = None) -> Service:
    """The services of the config (see :func:`load`), their runtime made with ``options``."""
    return Service(load(ctx), options, factory=state(ctx).runtime_factory)


def run(
    fn: Callable[[], Coroutine[Any, Any, T]], backend_options: dict[str, Any] | None = None
) -> T:
    """Run an async command body; pegboard errors become a message and an exit code.

    A ConfigError (bad usage, a port in use) exits 2, any other PegboardError 1, also when a
    task group wrapped it in an exception group. ``backend_options``: anyio's, for the
    asyncio backend (``pegboard serve --http`` passes
    :func:`~pegboard.gateway.transports.loop_options`).
    """
    try:
        return anyio.run(fn, backend_options=backend_options)
    except (PegboardError, BaseExceptionGroup) as exc:
        error = first_pegboard_error(exc)
        if error is None:
            raise
        fail(str(error), EXIT_USAGE if isinstance(error, ConfigError) else EXIT_FAILED)


def first_pegboard_error(exc: BaseException) -> PegboardError | None:
    """``exc`` itself, or the first PegboardError inside (nested) exception groups."""
    if isinstance(exc, PegboardError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := first_pegboard_error(inner)) is not None:
                return found
    return None


def echo_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2, default=str) + "\n")


def print_excluded(collisions: Sequence[McpCollision], server_ids: Sequence[str] = ()) -> None:
    """One stderr line per tool left out because several claim its wire name (stdout stays
    the table or the JSON). ``server_ids`` limits it to collisions touching those servers."""
    for collision in collisions:
        if server_ids and not any(s.server_id in server_ids for s in collision.sources):
            continue
        typer.echo(f"excluded: {collision.describe()}", err=True)

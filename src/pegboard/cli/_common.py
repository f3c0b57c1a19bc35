"""Shared CLI plumbing: the global ``--config`` option, exit codes, JSON output, errors."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

import anyio
import typer

from pegboard._lazy import import_burst
from pegboard._switches import switched_off
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
F = TypeVar("F", bound=Callable[..., Any])


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


def cache_read(command: F) -> F:
    """A command that reads the caches and exits (``tools list``, ``servers status``...): its
    lazy imports and the runtime it builds are one :func:`~pegboard._lazy.import_burst`, so no
    garbage collection walks them while they are made (36-53 passes, ~2% of the command)."""

    @functools.wraps(command)
    def read(*args: Any, **kwargs: Any) -> Any:
        with import_burst():
            return command(*args, **kwargs)

    return cast(F, read)


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


def run(fn: Callable[[], Coroutine[Any, Any, T]], *, fast_loop: bool = False) -> T:
    """Run an async command body; pegboard errors become a message and an exit code.

    A ConfigError (bad usage, a port in use) exits 2, any other PegboardError 1, also when a
    task group wrapped it in an exception group. ``fast_loop``: on uvloop's event loop when
    it is installed (:func:`fast_loop_options`; `pegboard serve`).
    """
    try:
        return anyio.run(fn, backend_options=fast_loop_options() if fast_loop else None)
    except (PegboardError, BaseExceptionGroup) as exc:
        error = first_pegboard_error(exc)
        if error is None:
            raise
        fail(str(error), EXIT_USAGE if isinstance(error, ConfigError) else EXIT_FAILED)


NO_UVLOOP_ENV = "PEGBOARD_NO_UVLOOP"


def fast_loop_options() -> dict[str, Any]:
    """anyio's asyncio backend options for a server: uvloop's event loop (the
    ``uvloop`` extra) when it is installed and ``PEGBOARD_NO_UVLOOP`` is not 1/true/yes,
    else none (asyncio's own loop). uvloop runs the loop's turns in C: x0.90 of the
    instructions per proxied stdio call (bench/callgrind_call.py)."""
    if switched_off(NO_UVLOOP_ENV):
        return {}
    try:
        import uvloop  # noqa: F401  # the extra; a missing or broken one leaves asyncio's
    except ImportError:
        return {}
    return {"use_uvloop": True}


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

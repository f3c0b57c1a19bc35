"""Root typer app; each command group lives in its own module."""

from __future__ import annotations

import copy
import importlib
from typing import Annotated

import typer
from typer import _click as click

from pegboard._lazy import import_burst
from pegboard.cli._common import state
from pegboard.cli.help import PlainCommand, PlainGroup

# name -> (module, attribute): a typer app (a command group) or a command function. A module
# is imported only when its command runs or help lists it, so ``tools list`` does not pay
# for the chat loop, the audit reader or the gateway.
COMMANDS = {
    "serve": ("pegboard.cli.serve_cmd", "serve"),
    "chat": ("pegboard.cli.chat_cmd", "chat"),
    "tools": ("pegboard.cli.tools_cmd", "app"),
    "servers": ("pegboard.cli.servers_cmd", "app"),
    "config": ("pegboard.cli.config_cmd", "app"),
    "bench": ("pegboard.cli.bench_cmd", "app"),
    "kb": ("pegboard.cli.kb_cmd", "app"),
    "audit": ("pegboard.cli.audit_cmd", "app"),
    "approvals": ("pegboard.cli.approvals_cmd", "app"),
    "ui": ("pegboard.cli.ui_cmd", "ui"),
}


def lazy_command(name: str) -> click.Command:
    """The click command ``name`` of :data:`COMMANDS`, its module imported now (a burst:
    :func:`~pegboard._lazy.import_burst`)."""
    module, attribute = COMMANDS[name]
    with import_burst():
        target = getattr(importlib.import_module(module), attribute)
    command: click.Command
    if isinstance(target, typer.Typer):
        command = _lazy_group(target)
    else:
        info = typer.models.CommandInfo(name=name, cls=PlainCommand, callback=target)
        command = typer.main.get_command_from_info(
            info, pretty_exceptions_short=True, rich_markup_mode=None
        )
    command.name = name
    return command


def _lazy_group(target: typer.Typer) -> click.Command:
    """``target``'s click group with its commands left pending (:class:`PlainGroup`): only
    the one a command line names is made."""
    shell = copy.copy(target)
    shell.registered_commands = []
    group = typer.main.get_group(shell)
    if not isinstance(group, PlainGroup):
        return typer.main.get_group(target)
    for info in target.registered_commands:
        name = info.name or typer.main.get_command_name(info.callback.__name__)  # type: ignore[union-attr]
        group.pending[name] = info
    return group


class LazyGroup(PlainGroup):
    """The root group: its subcommands come from :data:`COMMANDS`, imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *(n for n in super().list_commands(ctx) if n not in COMMANDS)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            self.add_command(lazy_command(cmd_name), cmd_name)
        return self.commands.get(cmd_name)


app = typer.Typer(
    cls=LazyGroup,
    name="pegboard",
    help="A tool layer for LLM agents: many tools and MCP servers, a small context.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def main(
    ctx: typer.Context,
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            "-c",
            metavar="PATH",
            help="Config file (default: $PEGBOARD_CONFIG, then the user config dir).",
        ),
    ] = None,
) -> None:
    """Run `pegboard serve` as your MCP client's only server; see `pegboard config path`."""
    state(ctx).config_path = config

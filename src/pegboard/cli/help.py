"""Plain, wrapped ``--help`` for every command (click's layout, not typer's rich panels).

typer's defaults print ``<bool>`` after flags, ``{name}`` for required arguments and
interpret ``[...]`` as rich markup, so ``[gateway]`` vanishes from help. Plain help wraps
paragraphs to the terminal width and keeps every character. Commands use
``cls=PlainCommand``; command groups ``cls=PlainGroup``.
"""

from __future__ import annotations

from typing import Any

from typer import _click as click  # typer vendors click; its classes are not the click package's
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command_from_info
from typer.models import CommandInfo


def _argument_name(param: Any) -> str:
    name = (param.metavar or param.name or "arg").upper()
    return f"{name}..." if param.nargs != 1 else name


def _option_record(param: Any, ctx: click.Context) -> tuple[str, str]:
    names = ", ".join(sorted(param.opts, key=len))
    if param.secondary_opts:
        names += " / " + ", ".join(param.secondary_opts)
    if not param.is_flag and not param.count:
        names += " " + (param.metavar or (param.name or "value").upper().replace("_", "-"))
    record = param.get_help_record(ctx)
    return names, record[1] if record else ""


def _format_params(cmd: click.Command, ctx: click.Context, formatter: click.HelpFormatter) -> None:
    args: list[tuple[str, str]] = []
    opts: list[tuple[str, str]] = []
    for param in cmd.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        if param.param_type_name == "argument":
            args.append((_argument_name(param), getattr(param, "help", None) or ""))
        elif param.param_type_name == "option":
            opts.append(_option_record(param, ctx))
    if args:
        with formatter.section("Arguments"):
            formatter.write_dl(args)
    if opts:
        with formatter.section("Options"):
            formatter.write_dl(opts)


def _usage_pieces(cmd: click.Command, ctx: click.Context) -> list[str]:
    pieces = [cmd.options_metavar] if cmd.options_metavar else []
    for param in cmd.get_params(ctx):
        if param.param_type_name == "argument":
            name = _argument_name(param)
            pieces.append(name if param.required else f"[{name}]")
    return pieces


class PlainCommand(TyperCommand):
    """A command whose help names arguments (``ID``) and option values (``--port PORT``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["rich_markup_mode"] = None
        super().__init__(*args, **kwargs)

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return _usage_pieces(self, ctx)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _format_params(self, ctx, formatter)


class PlainGroup(TyperGroup):
    """A command group with the same plain help as :class:`PlainCommand`.

    Its subcommands may be left as typer's ``CommandInfo`` (:attr:`pending`, in registration
    order, by ``pegboard.cli.app.lazy_command``): one is made a click command when it is
    looked up, all of them when the group lists them or is given a name it does not know (the
    help, completions and the typo's "Did you mean" see every command, in order). Making one
    evaluates its function's annotations: ``tools list`` makes one of five.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["rich_markup_mode"] = None
        super().__init__(*args, **kwargs)
        self.pending: dict[str, CommandInfo] = {}

    def _make(self, name: str) -> None:
        if (info := self.pending.pop(name, None)) is not None:
            self.commands[name] = get_command_from_info(
                info, pretty_exceptions_short=True, rich_markup_mode=None
            )

    def _make_all(self) -> None:
        if self.pending:
            order = [*self.pending, *(n for n in self.commands if n not in self.pending)]
            for name in list(self.pending):
                self._make(name)
            self.commands = {name: self.commands[name] for name in order}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._make(cmd_name)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._make_all()
        return super().list_commands(ctx)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.pending and args[0] not in self.commands:
            self._make_all()
        return super().resolve_command(ctx, args)

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return [*_usage_pieces(self, ctx), self.subcommand_metavar]

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _format_params(self, ctx, formatter)
        self.format_commands(ctx, formatter)

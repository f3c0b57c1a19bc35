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
    """A command group with the same plain help as :class:`PlainCommand`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["rich_markup_mode"] = None
        super().__init__(*args, **kwargs)

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return [*_usage_pieces(self, ctx), self.subcommand_metavar]

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _format_params(self, ctx, formatter)
        self.format_commands(ctx, formatter)

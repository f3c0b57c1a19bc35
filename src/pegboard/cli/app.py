"""Root typer app; each command group lives in its own module."""

from __future__ import annotations

from typing import Annotated

import typer

from pegboard.cli import (
    audit_cmd,
    bench_cmd,
    chat_cmd,
    config_cmd,
    kb_cmd,
    serve_cmd,
    servers_cmd,
    tools_cmd,
)
from pegboard.cli._common import state
from pegboard.cli.help import PlainCommand, PlainGroup

app = typer.Typer(
    cls=PlainGroup,
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


app.command("serve", cls=PlainCommand)(serve_cmd.serve)
app.command("chat", cls=PlainCommand)(chat_cmd.chat)
app.add_typer(tools_cmd.app, name="tools")
app.add_typer(servers_cmd.app, name="servers")
app.add_typer(config_cmd.app, name="config")
app.add_typer(bench_cmd.app, name="bench")
app.add_typer(kb_cmd.app, name="kb")
app.add_typer(audit_cmd.app, name="audit")

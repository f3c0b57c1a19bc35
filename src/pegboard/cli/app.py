"""Root typer app; each command group lives in its own module."""

from __future__ import annotations

import typer

from pegboard.cli import bench_cmd, tools_cmd

app = typer.Typer(
    name="pegboard",
    help="A tool layer for LLM agents: many tools and MCP servers, a small context.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(tools_cmd.app, name="tools")
app.add_typer(bench_cmd.app, name="bench")

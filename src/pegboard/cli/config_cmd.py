"""``pegboard config``: where the config is, what it says, and importing other clients'."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import tomli_w
import typer

from pegboard.cli import render
from pegboard.cli._common import EXIT_USAGE, echo_json, fail, load
from pegboard.cli.help import PlainCommand, PlainGroup
from pegboard.config import plan_import, write_config
from pegboard.errors import ConfigError
from pegboard.service.config import config_data, redact

app = typer.Typer(
    cls=PlainGroup, help="Show, locate and import configuration.", no_args_is_help=True
)


@app.command("path", cls=PlainCommand)
def path_cmd(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
) -> None:
    """Print where the config file and the data directory are."""
    loaded = load(ctx, may_create=True)
    info = {
        "config": str(loaded.path),
        "exists": loaded.exists,
        "data_dir": str(loaded.data_dir),
        "catalog": str(loaded.catalog_path),
    }
    if as_json:
        echo_json(info)
        return
    suffix = "" if loaded.exists else "  (not created yet: defaults apply)"
    typer.echo(f"config:   {loaded.path}{suffix}")
    typer.echo(f"data dir: {loaded.data_dir}")
    typer.echo(f"catalog:  {loaded.catalog_path}")


@app.command("show", cls=PlainCommand)
def show_cmd(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
    effective: bool = typer.Option(
        False, "--effective", help="Show every setting with its default, not only the file."
    ),
    show_secrets: bool = typer.Option(
        False,
        "--show-secrets",
        help="Do not mask secret env/header values, API keys and the token.",
    ),
) -> None:
    """Print the configuration.

    The file as written, or with --effective every setting with its default.

    Secrets (env and header values whose names say key, token, secret, password or auth;
    API keys; the gateway token) are masked unless --show-secrets is given.
    """
    loaded = load(ctx)
    data = config_data(loaded, effective=effective, show_secrets=show_secrets)
    if as_json:
        echo_json(data)
        return
    if not data:
        typer.echo(f"# {loaded.path} does not exist or is empty: defaults apply")
        return
    typer.echo(tomli_w.dumps(data), nl=False)


@app.command("import", cls=PlainCommand)
def import_cmd(
    ctx: typer.Context,
    source: Annotated[
        Path,
        typer.Argument(
            help="A claude_desktop_config.json, Cursor mcp.json or VS Code mcp.json/settings.json."
        ),
    ],
    dry_run: bool = typer.Option(
        False, "--dry-run", "-n", help="Show the diff of the config file; write nothing."
    ),
) -> None:
    """Merge another MCP client's servers into pegboard's config.

    New server ids are added; existing ids take the imported command/url and keep pegboard's
    own keys (name, enabled, tool lists, timeouts). The old file is kept as config.toml.bak.
    """
    loaded = load(ctx, may_create=True)
    try:
        plan = plan_import(source, loaded.raw)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    console = render.console(stderr=True)
    for warning in plan.warnings:
        console.print(f"warning: {warning}")
    summary = (
        f"{len(plan.added)} added ({', '.join(plan.added) or '-'}), "
        f"{len(plan.changed)} changed ({', '.join(plan.changed) or '-'}), "
        f"{len(plan.unchanged)} unchanged"
    )
    if dry_run:
        typer.echo(plan.diff(loaded.path, mask=redact) or "# no changes", nl=False)
        console.print(f"dry run: {summary}; nothing written")
        return
    if not plan.has_changes:
        console.print(f"nothing to import: {summary}")
        return
    try:
        write_config(loaded.path, plan.merged)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    console.print(f"imported into {loaded.path}: {summary}")

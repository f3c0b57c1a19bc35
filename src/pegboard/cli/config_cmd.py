"""``pegboard config``: where the config is, what it says, and importing other clients'."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Annotated, Any

import tomli_w
import typer

from pegboard.cli import render
from pegboard.cli._common import EXIT_USAGE, echo_json, fail, load
from pegboard.cli.help import PlainCommand, PlainGroup
from pegboard.config import plan_import, write_config
from pegboard.core.redact import looks_secret, mask, redact_args, redact_url
from pegboard.errors import ConfigError

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


REDACTED = "***"


def redact(data: dict[str, Any]) -> dict[str, Any]:
    """A copy with secrets masked: secret-looking env and header values, API keys, the token.

    Other env values (``DEBUG = "1"``, a path) are shown: a dry run must show what changes.
    """
    out = copy.deepcopy(data)
    for server in out.get("servers", {}).values():
        if not isinstance(server, dict):
            continue
        secrets = [
            str(v)
            for key in ("env", "headers")
            if isinstance(server.get(key), dict)
            for k, v in server[key].items()
            if looks_secret(k, v)
        ]
        for key in ("env", "headers"):
            if isinstance(server.get(key), dict):
                server[key] = {
                    k: REDACTED if looks_secret(k, v) else v for k, v in server[key].items()
                }
        if isinstance(server.get("url"), str):
            server["url"] = redact_url(server["url"])
        if isinstance(server.get("args"), list):  # `--token=<env value>`, `--api-key sk-...`
            server["args"] = redact_args([mask(str(a), secrets) for a in server["args"]])
    for model in out.get("models", {}).values():
        if not isinstance(model, dict):
            continue
        if isinstance(model.get("base_url"), str):  # the key itself is only ever in the env
            model["base_url"] = redact_url(model["base_url"])
    for provider in out.get("web_search", {}).values():
        if isinstance(provider.get("url"), str):
            provider["url"] = redact_url(provider["url"])
        if provider.get("api_key"):
            provider["api_key"] = REDACTED
    if out.get("gateway", {}).get("token"):
        out["gateway"]["token"] = REDACTED
    return out


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
    data = loaded.config.model_dump(mode="json", exclude_none=True) if effective else loaded.raw
    data = data if show_secrets else redact(data)
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

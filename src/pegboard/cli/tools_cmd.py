"""``pegboard tools``: list the registry's tools."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from pegboard.core.registry import ToolRegistry, default_registry

app = typer.Typer(help="List, search, inspect and call tools.", no_args_is_help=True)


def _registry() -> ToolRegistry:
    return default_registry()


@app.command("list")
def list_tools(
    query: str | None = typer.Option(None, "--query", "-q", help="Case-insensitive substring."),
    namespace: str | None = typer.Option(None, "--namespace", "-n", help="Namespace or label."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
) -> None:
    """Show every registered tool as a table (name, namespace, defer policy, description)."""
    entries = _registry().get_all(query=query, namespace=namespace)
    if as_json:
        rows = [
            {
                "name": e.name,
                "namespace": e.namespace,
                "label": e.label,
                "defer": e.defer,
                "description": e.summary,
            }
            for e in entries
        ]
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    console = Console()
    table = Table(title=f"{len(entries)} tools")
    for column in ("name", "namespace", "defer", "description"):
        table.add_column(column)
    for e in entries:
        table.add_row(e.name, e.label, e.defer, e.summary)
    console.print(table)

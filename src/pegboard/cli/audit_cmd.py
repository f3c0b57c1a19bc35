"""``pegboard audit``: read the audit log of tool calls (every route writes one record)."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from pegboard.cli._common import echo_json, service
from pegboard.cli.help import PlainCommand, PlainGroup

app = typer.Typer(cls=PlainGroup, help="Read the audit log of tool calls.", no_args_is_help=True)


@app.command("tail", cls=PlainCommand)
def tail_cmd(
    ctx: typer.Context,
    count: Annotated[int, typer.Option("-n", "--lines", min=1, help="How many records.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Show the last tool calls: time, route, tool, approval, outcome, duration.

    Records live in <data dir>/audit.jsonl (rotated at 5 MB, three old files kept), or with
    [store] url in the team store, every replica's together.
    """
    audit = service(ctx).audit
    records = audit.tail(count)
    if as_json:
        echo_json(records)
        return
    if not records:
        typer.echo(f"no tool calls recorded yet ({audit.where})")
        return
    for record in records:
        typer.echo(_line(record))


def _field(record: dict[str, Any], *names: str) -> Any:
    return next((record[n] for n in names if record.get(n) is not None), None)


def _line(record: dict[str, Any]) -> str:
    stamp = _field(record, "time")
    when = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))
        if isinstance(stamp, int | float)
        else str(stamp or "-")
    )
    seconds = _field(record, "duration", "seconds")
    took = f"{seconds * 1000:.0f} ms" if isinstance(seconds, int | float) else "-"
    parts = [
        when,
        str(_field(record, "route", "via") or "-"),
        str(_field(record, "tool", "tool_name") or "-"),
        str(_field(record, "approval") or "-"),
        str(_field(record, "outcome") or "-"),
        took,
    ]
    return "  ".join(parts)

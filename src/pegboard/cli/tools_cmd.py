"""``pegboard tools``: list, search, inspect and call the tools of a profile.

Everything but ``call`` reads the on-disk catalog only: no server is started.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pegboard.cli import trust_cmd
from pegboard.cli._common import (
    EXIT_FAILED,
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    cache_read,
    echo_json,
    fail,
    print_excluded,
    run,
    service,
)
from pegboard.cli.help import PlainCommand, PlainGroup
from pegboard.cli.render import Column, print_table
from pegboard.core.entry import ToolEntry
from pegboard.core.redact import shown
from pegboard.core.wording import plural
from pegboard.errors import PegboardError, ToolError

if TYPE_CHECKING:
    from pegboard.service import Service

app = typer.Typer(
    cls=PlainGroup, help="List, search, inspect and call tools.", no_args_is_help=True
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
WideOpt = Annotated[
    bool, typer.Option("--wide", "-w", help="Whole descriptions, wrapped, not one line each.")
]
ProfileOpt = Annotated[
    str | None, typer.Option("--profile", "-p", help="Profile whose tools to use.")
]


def _service(ctx: typer.Context, profile: str | None) -> Service:
    from pegboard.runtime import RuntimeOptions  # lazy: the catalog needs the SDK

    # Nothing deferred: a person sees (and may call) every tool of the profile.
    services = service(ctx, RuntimeOptions(profile=profile, prewarm=False, defer=False))
    try:
        services.runtime  # noqa: B018 - a bad profile is a usage error, said now
    except PegboardError as exc:
        fail(str(exc), EXIT_USAGE)
    return services


def _row(e: ToolEntry) -> dict[str, Any]:
    return {
        "name": e.name,
        "namespace": e.namespace,
        "label": e.label,
        "defer": e.defer,
        "description": e.summary,
    }


def _table(title: str, entries: list[ToolEntry], wide: bool = False) -> None:
    columns = [Column("name", key=True), Column("namespace", key=True, optional=True)]
    columns += [Column("defer", key=True, optional=True), Column("description")]
    rows = [[e.name, e.label, e.defer, e.summary] for e in entries]
    print_table(title, columns, rows, wide=wide)


@app.command("list", cls=PlainCommand)
@cache_read
def list_tools(
    ctx: typer.Context,
    query: Annotated[
        str | None, typer.Option("--query", "-q", help="Case-insensitive substring.")
    ] = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Namespace or label.")
    ] = None,
    wide: WideOpt = False,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List the profile's tools.

    One row per tool: name, namespace, defer policy and the first line of its description
    (--wide prints whole descriptions).
    """
    tools = _service(ctx, profile).tools
    entries = tools.entries(query=query, namespace=namespace)
    if as_json:
        echo_json([_row(e) for e in entries])
    else:
        _table(plural(len(entries), "tool"), entries, wide)
    print_excluded(tools.excluded())


@app.command("search", cls=PlainCommand)
@cache_read
def search_tools(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What the tool should do, in words.")],
    limit: Annotated[int, typer.Option("--limit", "-k", help="Results to show.")] = 8,
    wide: WideOpt = False,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Search the profile's tools by what they do.

    Ranked as the tool_search meta-tool ranks them for a model.
    """
    found = _service(ctx, profile).tools.search(query, limit)
    entries = [e for e, _ in found]
    if as_json:
        echo_json([_row(e) | {"score": round(h.score, 4)} for e, h in found])
        return
    if not entries:
        fail(f"no tool matches {query!r}", EXIT_NOT_FOUND)
    _table(f"best {len(entries)} for {query!r}", entries, wide)


def _entry(services: Service, name: str) -> ToolEntry:
    try:
        return services.tools.get(name)
    except ToolError as exc:
        fail(str(exc), EXIT_NOT_FOUND)


@app.command("inspect", cls=PlainCommand)
@cache_read
def inspect_tool(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Wire name, e.g. mcp__github__create_issue.")],
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show one tool: its server, original name and signature.

    The signature is the stub tool_inspect gives a model; --json adds the full schemas.
    """
    services = _service(ctx, profile)
    entry = _entry(services, name)
    origin = {
        "server_id": entry.source.server_id if entry.source else None,
        "original_name": entry.source.tool_name if entry.source else None,
    }
    if as_json:
        tool = entry.tool
        echo_json(
            _row(entry)
            | origin
            | {
                "input_schema": tool.input_schema,
                "output_schema": tool.output_schema,
                "annotations": tool.annotations,
                "needs_approval": tool.needs_approval is not None
                and tool.needs_approval is not False,
            }
        )
        return
    # a server's text, shown to a person deciding whether to trust it: every control, bidi or
    # invisible character as a visible escape (the description has no invisible ones left)
    if entry.source:
        origin_line = (
            f"// server: {entry.source.server_id}, original name: {entry.source.tool_name}"
        )
        typer.echo(shown(origin_line))
    typer.echo(shown(entry.definition.stub()))
    if line := trust_cmd.flag_line(services.tools.flags(entry)):
        typer.echo(line)


@app.command("call", cls=PlainCommand)
def call_tool(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Wire name of the tool.")],
    arguments: Annotated[
        str, typer.Argument(help='Arguments as a JSON object, e.g. {"a": 1}.')
    ] = "{}",
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Approve gated tools without asking.")
    ] = False,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Call a tool once and print the result.

    Starts the tool's server; exits 1 when the tool reports an error.
    """
    from pegboard.cli.approval_prompt import cli_approval  # lazy: only a call asks

    args, problem = _parse(arguments)
    tools = _service(ctx, profile).tools
    # Unreadable arguments are refused on the call path too, so the audit log has the call.
    outcome = run(lambda: tools.call(name, args, cli_approval(yes), unparsable=problem))
    output = outcome.output
    if not outcome.found:
        fail(output.as_text(), EXIT_NOT_FOUND)
    if problem is not None:
        fail(problem, EXIT_USAGE)
    if as_json:
        from pegboard.mcp.results import output_to_call_result  # lazy: the MCP SDK

        echo_json(
            output_to_call_result(output).model_dump(mode="json", by_alias=True, exclude_none=True)
        )
    else:
        typer.echo(output.as_text())
    if outcome.failed:
        raise typer.Exit(EXIT_FAILED)


def _parse(arguments: str) -> tuple[dict[str, Any], str | None]:
    """The arguments object, or ``{}`` and why the text is not one."""
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError as exc:
        return {}, f"arguments are not valid JSON: {exc}"
    if not isinstance(args, dict):
        return {}, "arguments must be a JSON object"
    return args, None


app.command("trust", cls=PlainCommand)(trust_cmd.trust)

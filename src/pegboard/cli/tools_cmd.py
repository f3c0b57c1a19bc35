"""``pegboard tools``: list, search, inspect and call the tools of a profile.

Everything but ``call`` reads the on-disk catalog only: no server is started.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pegboard.calls.approval import ApprovalHandler
from pegboard.calls.execute import error_output, stub_of
from pegboard.cli import trust_cmd
from pegboard.cli._common import (
    EXIT_FAILED,
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    echo_json,
    fail,
    load,
    print_excluded,
    run,
)
from pegboard.cli.approval_prompt import cli_approval
from pegboard.cli.help import PlainCommand, PlainGroup
from pegboard.cli.render import Column, print_table
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.errors import PegboardError, ToolError, ToolNotAllowed, ToolNotFound
from pegboard.toolsets import ToolList

VIA = "cli"

if TYPE_CHECKING:
    from pegboard.runtime import ToolRuntime

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


def _runtime(ctx: typer.Context, profile: str | None) -> ToolRuntime:
    from pegboard.runtime import RuntimeOptions, ToolRuntime  # lazy: the catalog needs the SDK

    loaded = load(ctx)
    try:
        # Nothing deferred: a person sees (and may call) every tool of the profile.
        return ToolRuntime(loaded, RuntimeOptions(profile=profile, prewarm=False, defer=False))
    except PegboardError as exc:
        fail(str(exc), EXIT_USAGE)


def _listing(runtime: ToolRuntime) -> ToolList:
    """The profile's tools, listed by the toolset the gateway and the dispatcher use."""
    return runtime.surface.tools


def _row(e: ToolEntry) -> dict[str, Any]:
    return {
        "name": e.name,
        "namespace": e.namespace,
        "label": e.label,
        "defer": e.defer,
        "description": e.summary,
    }


def _table(title: str, entries: list[ToolEntry], wide: bool = False) -> None:
    columns = [Column("name", key=True), Column("namespace", key=True)]
    columns += [Column("defer", key=True), Column("description")]
    rows = [[e.name, e.label, e.defer, e.summary] for e in entries]
    print_table(title, columns, rows, wide=wide)


@app.command("list", cls=PlainCommand)
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
    runtime = _runtime(ctx, profile)
    active = {e.name for e in _listing(runtime).entries()}
    entries = [
        e for e in runtime.registry.get_all(query=query, namespace=namespace) if e.name in active
    ]
    if as_json:
        echo_json([_row(e) for e in entries])
    else:
        _table(f"{len(entries)} tools", entries, wide)
    print_excluded(runtime.excluded())


@app.command("search", cls=PlainCommand)
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
    runtime = _runtime(ctx, profile)
    allowed = frozenset(e.name for e in _listing(runtime).entries())
    hits = runtime.index.search([query], limit=limit, allowed=allowed)
    entries = [e for h in hits if (e := runtime.registry.get_by_name(h.name)) is not None]
    if as_json:
        scores = {h.name: h.score for h in hits}
        echo_json([_row(e) | {"score": round(scores[e.name], 4)} for e in entries])
        return
    if not entries:
        fail(f"no tool matches {query!r}", EXIT_NOT_FOUND)
    _table(f"best {len(entries)} for {query!r}", entries, wide)


def _entry(runtime: ToolRuntime, name: str) -> ToolEntry:
    try:
        return _listing(runtime).resolve(name)
    except ToolError as exc:
        fail(str(exc), EXIT_NOT_FOUND)


@app.command("inspect", cls=PlainCommand)
def inspect_tool(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Wire name, e.g. mcp__github__create_issue.")],
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show one tool: its server, original name and signature.

    The signature is the stub tool_inspect gives a model; --json adds the full schemas.
    """
    runtime = _runtime(ctx, profile)
    entry = _entry(runtime, name)
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
    if entry.source:
        typer.echo(f"// server: {entry.source.server_id}, original name: {entry.source.tool_name}")
    typer.echo(stub_of(entry))
    if line := trust_cmd.flag_line(runtime.catalog, entry):
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
    args, problem = _parse(arguments)
    runtime = _runtime(ctx, profile)
    handler = cli_approval(yes)
    # Unreadable arguments are refused on the call path too, so the audit log has the call.
    output, code = run(lambda: _call(runtime, name, args, handler, problem))
    if code == EXIT_NOT_FOUND:
        fail(output.as_text(), code)
    if problem is not None:
        fail(problem, EXIT_USAGE)
    if as_json:
        from pegboard.mcp.results import output_to_call_result  # lazy: the MCP SDK

        echo_json(
            output_to_call_result(output).model_dump(mode="json", by_alias=True, exclude_none=True)
        )
    else:
        typer.echo(output.as_text())
    if code:
        raise typer.Exit(code)


def _parse(arguments: str) -> tuple[dict[str, Any], str | None]:
    """The arguments object, or ``{}`` and why the text is not one."""
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError as exc:
        return {}, f"arguments are not valid JSON: {exc}"
    if not isinstance(args, dict):
        return {}, "arguments must be a JSON object"
    return args, None


async def _call(
    runtime: ToolRuntime,
    name: str,
    args: dict[str, Any],
    handler: ApprovalHandler,
    problem: str | None = None,
) -> tuple[ToolOutput, int]:
    """One call through the runtime's tool session (resolve, approval, audit); servers
    start only when the name resolves. Returns the output and the exit code."""
    session = runtime.surface.tool_session

    async def attempt() -> tuple[ToolOutput, int]:
        try:
            output = await session.call(
                name,
                args,
                VIA,
                via=VIA,
                approval=handler,
                unparsable=problem,
                raising=(ToolNotFound, ToolNotAllowed),
            )
        except (ToolNotFound, ToolNotAllowed) as exc:
            return error_output(exc), EXIT_NOT_FOUND
        return output, EXIT_FAILED if output.is_error else 0

    if problem is not None or session.tools.get(name) is None:  # refused without a server
        return await attempt()
    async with runtime.running():
        return await attempt()


app.command("trust", cls=PlainCommand)(trust_cmd.trust)

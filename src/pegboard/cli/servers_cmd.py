"""``pegboard servers``: the configured MCP servers, their state, refreshing and switching."""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

from pegboard.cli import servers_add
from pegboard.cli._common import (
    EXIT_FAILED,
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    cache_read,
    echo_json,
    fail,
    load,
    print_excluded,
    run,
    service,
)
from pegboard.cli.help import PlainCommand, PlainGroup
from pegboard.cli.render import Column, print_table
from pegboard.core.redact import mask, redact_args, redact_url
from pegboard.core.wording import plural
from pegboard.errors import CatalogError, ConfigError
from pegboard.mcp.status import ReplicaView, ServerStatus
from pegboard.service.servers import RefreshResult, UnknownServer

if TYPE_CHECKING:
    from pegboard.mcp.sync import McpCollision
    from pegboard.service import Service

app = typer.Typer(
    cls=PlainGroup,
    help="Add, remove, check, refresh, enable, disable MCP servers.",
    no_args_is_help=True,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
WideOpt = Annotated[
    bool, typer.Option("--wide", "-w", help="Show whole cells, wrapped, instead of one line.")
]
IdsArg = Annotated[list[str] | None, typer.Argument(help="Server ids (default: every server).")]


def _service(ctx: typer.Context) -> Service:
    from pegboard.runtime import RuntimeOptions  # lazy: the catalog needs the SDK

    return service(ctx, RuntimeOptions(prewarm=False))


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else "never"


def _state(s: ServerStatus) -> str:
    # The CLI starts no server: "cold" with a cached list means "listed before, not running".
    return "cached" if s.state == "cold" and s.fetched_at else s.state


def _status_row(s: ServerStatus, excluded: list[McpCollision]) -> dict[str, object]:
    return {
        "id": s.server_id,
        "name": s.name,
        "state": _state(s),
        "tools": s.tool_count,
        "last_refresh": s.fetched_at,
        "error": s.error or s.gate_error,
        "error_at": s.at if s.error else None,
        "waiting_for_trust": list(s.pending_trust),
        "launch_changed": s.launch_changed,
        "flags": {name: list(flags) for name, flags in s.flags},
        "excluded": [
            c.as_json() for c in excluded if any(x.server_id == s.server_id for x in c.sources)
        ],
        "refused": [{"tool": name, "reason": why} for name, why in s.refused],
    }


def _replica_row(v: ReplicaView) -> dict[str, object]:
    return {
        "replica": v.replica,
        "host": v.host,
        "pid": v.pid,
        "state": v.state,
        "tools": v.tool_count,
        "last_refresh": v.fetched_at,
        "error": v.error,
        "error_at": v.error_at,
        "backoff_until": v.backoff_until,
        "last_seen": v.seen_at,
        "stale": v.stale,
    }


def _seen(v: ReplicaView) -> str:
    ago = f"{max(0, round(time.time() - v.seen_at))} s ago"
    return f"{ago}, stale" if v.stale else ago


def _print_replicas(views: list[ReplicaView], wide: bool) -> None:
    """One row per replica per server: each replica supervises its own upstream children."""
    columns = [
        Column("id", key=True),
        Column("replica", key=True),
        Column("state", key=True),
        Column("tools", key=True),
        Column("last seen", key=True),
        Column("last error"),
    ]
    rows = [
        [
            v.server_id,
            f"{v.replica} (pid {v.pid} on {v.host})"
            if v.replica != f"{v.host}:{v.pid}"
            else v.replica,
            v.state,
            str(v.tool_count),
            _seen(v),
            f"{v.error} ({_when(v.error_at)})" if v.error else "",
        ]
        for v in views
    ]
    replicas = len({v.replica for v in views})
    stale = len({v.replica for v in views if v.stale})
    title = f"MCP server status on {plural(replicas, 'replica')}"
    print_table(title + (f" ({stale} stale)" if stale else ""), columns, rows, wide=wide)


def _trust_lines(s: ServerStatus) -> list[str]:
    """What waits for `pegboard tools trust`, and poisoning flags (tool names escaped)."""
    from pegboard.core.names import escape_tool_name
    from pegboard.mcp.poison import escape_invisible

    lines = []
    if s.launch_changed:
        lines.append(
            f"{s.server_id}: launch definition changed; the server waits for trust (review "
            f"`pegboard servers list`, then `pegboard tools trust --server {s.server_id}`)"
        )
    if s.gate_error:
        lines.append(f"{s.server_id}: error: {escape_invisible(s.gate_error)}")
    if s.pending_trust:
        names = ", ".join(escape_invisible(n) for n in s.pending_trust)
        lines.append(f"{s.server_id}: waiting for trust (new or changed): {names}")
    if s.flags:
        flagged = "; ".join(f"{escape_invisible(n)}: {', '.join(f)}" for n, f in s.flags)
        lines.append(f"{s.server_id}: possible hidden instructions: {flagged}")
    for name, why in s.refused:
        lines.append(f"{s.server_id}: refused tool {escape_tool_name(name)}: {why}")
    return lines


def _check_ids(services: Service, ids: list[str] | None) -> list[str]:
    try:
        return services.servers.ids(ids)
    except UnknownServer as exc:
        fail(str(exc), EXIT_NOT_FOUND)


@app.command("list", cls=PlainCommand)
@cache_read
def list_cmd(ctx: typer.Context, wide: WideOpt = False, as_json: JsonOpt = False) -> None:
    """List the configured servers.

    One row per server: id, name, transport, command or URL, enabled.
    """
    loaded = load(ctx)
    rows = []
    for sid, server in loaded.config.servers.items():
        mcp = server
        # URL credentials, credential-looking arguments and configured secret values never
        # reach the terminal.
        argv = [mcp.command or "", *redact_args(mcp.args)]
        shown = " ".join(argv).strip() if mcp.command else mcp.url
        target = mask(redact_url(shown or "") if mcp.url else shown or "", mcp.secrets)
        rows.append(
            {
                "id": sid,
                "name": mcp.display_name,
                "transport": mcp.transport,
                "target": target,
                "enabled": mcp.enabled,
            }
        )
    if as_json:
        echo_json(rows)
        return
    columns = [
        Column("id", key=True),
        Column("name"),
        Column("transport", key=True),
        Column("command / url"),
        Column("enabled", key=True),
    ]
    keys = ("id", "name", "transport", "target", "enabled")
    rows_text = [[str(r[k]) for k in keys] for r in rows]
    print_table(f"{plural(len(rows), 'MCP server')} ({loaded.path})", columns, rows_text, wide=wide)


@app.command("status", cls=PlainCommand)
@cache_read
def status_cmd(
    ctx: typer.Context, ids: IdsArg = None, wide: WideOpt = False, as_json: JsonOpt = False
) -> None:
    """Show each server's state and last error.

    Also its cached tool count and last refresh.

    Read from the on-disk catalog: nothing is started. States: cached (listed before),
    cold (never listed: run `pegboard servers refresh`), failed (with the error), disabled.
    """
    services = _service(ctx)
    wanted = _check_ids(services, ids)
    try:
        statuses = services.servers.statuses(wanted)
        excluded = services.servers.excluded()
        views = services.servers.replica_views(wanted)
    except CatalogError as exc:
        fail(str(exc), EXIT_FAILED)
    finally:
        services.close()
    if as_json:
        rows_json = [_status_row(st, excluded) for st in statuses]
        if views is not None:  # a team store: every replica's view too
            for row in rows_json:
                row["replicas"] = [_replica_row(v) for v in views if v.server_id == row["id"]]
        echo_json(rows_json)
        return
    if views is not None and len({v.replica for v in views}) > 1:
        _print_replicas(views, wide)
    else:
        columns = [
            Column("id", key=True),
            Column("state", key=True),
            Column("tools", key=True),
            Column("last refresh", key=True),
            Column("last error"),
        ]
        rows = [
            [
                st.server_id,
                _state(st),
                str(st.tool_count),
                _when(st.fetched_at),
                f"{st.error} ({_when(st.at)})" if st.error else "",
            ]
            for st in statuses
        ]
        print_table("MCP server status", columns, rows, wide=wide)
    print_excluded(excluded, wanted)
    for line in (line for st in statuses for line in _trust_lines(st)):
        typer.echo(line)


@app.command("refresh", cls=PlainCommand)
def refresh_cmd(
    ctx: typer.Context,
    ids: IdsArg = None,
    concurrency: Annotated[int, typer.Option(help="Servers refreshed at once.")] = 4,
    as_json: JsonOpt = False,
) -> None:
    """Connect to servers and cache their tools.

    Exits 1 if any server failed.
    """
    services = _service(ctx)
    wanted = _check_ids(services, ids)
    results: list[RefreshResult] = []

    async def body() -> None:
        from rich.console import Console  # lazy (start-up time)
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        enabled = [sid for sid in wanted if services.loaded.config.servers[sid].enabled]
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        console = Console(stderr=True)
        with Progress(
            *columns,
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=as_json or not console.is_terminal,  # a piped stderr would get a "\n"
        ) as progress:
            task = progress.add_task("refreshing MCP servers", total=len(enabled))
            results.extend(
                await services.servers.refresh(
                    enabled,
                    concurrency=concurrency,
                    done=lambda result: progress.advance(task),
                )
            )

    run(body)
    rows = [_refresh_row(r) for r in results]
    if as_json:
        echo_json(rows)
    else:
        for r in rows:
            outcome = plural(int(str(r["tools"])), "tool") if r["ok"] else f"failed: {r['error']}"
            typer.echo(f"{r['id']}: {outcome} ({r['seconds']} s)")
    if any(not r["ok"] for r in rows):
        raise typer.Exit(EXIT_FAILED)


def _refresh_row(r: RefreshResult) -> dict[str, object]:
    row: dict[str, object] = {"id": r.server_id, "ok": r.ok}
    row |= {"tools": r.tools} if r.ok else {"error": r.error}
    return row | {"seconds": r.seconds}


def _set_enabled(ctx: typer.Context, server_id: str, enabled: bool) -> None:
    services = service(ctx)
    _check_ids(services, [server_id])
    try:
        path = services.servers.set_enabled(server_id, enabled)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    word = "enabled" if enabled else "disabled"
    typer.echo(f"{server_id} {word} in {path} (a running pegboard serve follows at once)")


# Unknown options belong to the server's command (`servers add fs npx -y pkg` without --).
app.command("add", cls=PlainCommand, context_settings={"ignore_unknown_options": True})(
    servers_add.add_cmd
)
app.command("remove", cls=PlainCommand)(servers_add.remove_cmd)


@app.command("enable", cls=PlainCommand)
def enable_cmd(
    ctx: typer.Context, server_id: Annotated[str, typer.Argument(help="Server id.")]
) -> None:
    """Enable a server in the config file."""
    _set_enabled(ctx, server_id, True)


@app.command("disable", cls=PlainCommand)
def disable_cmd(
    ctx: typer.Context, server_id: Annotated[str, typer.Argument(help="Server id.")]
) -> None:
    """Disable a server in the config file.

    A disabled server is never started and its tools disappear.
    """
    _set_enabled(ctx, server_id, False)


@app.command("logs", cls=PlainCommand)
def logs_cmd(
    ctx: typer.Context,
    server_id: Annotated[str, typer.Argument(help="Server id.")],
    as_json: JsonOpt = False,
) -> None:
    """Print the server's stderr of its last start.

    Up to 64 KB, with the values of its configured env and headers masked. Exits 3 when the
    server has not been started since it was configured.
    """
    services = service(ctx)
    _check_ids(services, [server_id])
    kept = services.servers.logs(server_id)
    if kept is None:
        fail(
            f"no stderr kept for {server_id} yet: it has not been started since "
            f"(try `pegboard servers refresh {server_id}`)",
            EXIT_NOT_FOUND,
        )
    if as_json:
        echo_json({"id": server_id, "path": str(kept.path), "stderr": kept.text})
        return
    typer.echo(kept.text, nl=False)

"""``pegboard servers``: the configured MCP servers, their state, refreshing and switching."""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import anyio
import typer

from pegboard.cli import servers_add
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
from pegboard.cli.help import PlainCommand, PlainGroup
from pegboard.cli.render import Column, print_table
from pegboard.config import LoadedConfig, write_config
from pegboard.core.redact import mask, redact_url
from pegboard.errors import ConfigError
from pegboard.mcp.status import ServerStatus

if TYPE_CHECKING:
    from pegboard.runtime import ToolRuntime

app = typer.Typer(
    cls=PlainGroup,
    help="Add, list, check, refresh, enable and disable MCP servers.",
    no_args_is_help=True,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
WideOpt = Annotated[
    bool, typer.Option("--wide", "-w", help="Show whole cells, wrapped, instead of one line.")
]
IdsArg = Annotated[list[str] | None, typer.Argument(help="Server ids (default: every server).")]


def _runtime(loaded: LoadedConfig) -> ToolRuntime:
    from pegboard.runtime import RuntimeOptions, ToolRuntime  # lazy: the catalog needs the SDK

    return ToolRuntime(loaded, RuntimeOptions(prewarm=False))


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else "never"


def _state(s: ServerStatus) -> str:
    # The CLI starts no server: "cold" with a cached list means "listed before, not running".
    return "cached" if s.state == "cold" and s.fetched_at else s.state


def _status_row(s: ServerStatus, runtime: ToolRuntime) -> dict[str, object]:
    return {
        "id": s.server_id,
        "name": s.name,
        "state": _state(s),
        "tools": s.tool_count,
        "last_refresh": s.fetched_at,
        "error": s.error,
        "error_at": s.at if s.error else None,
        "waiting_for_trust": list(s.pending_trust),
        "launch_changed": s.launch_changed,
        "flags": {name: list(flags) for name, flags in s.flags},
        "excluded": [c.as_json() for c in runtime.excluded(s.server_id)],
        "refused": [{"tool": name, "reason": why} for name, why in s.refused],
    }


def _trust_lines(s: ServerStatus) -> list[str]:
    """What waits for `pegboard tools trust`, and poisoning flags (tool names escaped)."""
    from pegboard.core.names import escape_tool_name
    from pegboard.mcp.poison import escape_invisible

    lines = []
    if s.launch_changed:
        lines.append(
            f"{s.server_id}: launch definition changed; not started until "
            f"`pegboard tools trust --server {s.server_id}`"
        )
    if s.pending_trust:
        names = ", ".join(escape_invisible(n) for n in s.pending_trust)
        lines.append(f"{s.server_id}: waiting for trust (definition changed): {names}")
    if s.flags:
        flagged = "; ".join(f"{escape_invisible(n)}: {', '.join(f)}" for n, f in s.flags)
        lines.append(f"{s.server_id}: possible hidden instructions: {flagged}")
    for name, why in s.refused:
        lines.append(f"{s.server_id}: refused tool {escape_tool_name(name)}: {why}")
    return lines


def _check_ids(loaded: LoadedConfig, ids: list[str] | None) -> list[str]:
    known = list(loaded.config.servers)
    unknown = [i for i in ids or () if i not in known]
    if unknown:
        fail(
            f"unknown server id(s): {', '.join(unknown)}; configured: {', '.join(known) or 'none'}",
            EXIT_NOT_FOUND,
        )
    return list(ids) if ids else known


@app.command("list", cls=PlainCommand)
def list_cmd(ctx: typer.Context, wide: WideOpt = False, as_json: JsonOpt = False) -> None:
    """List the configured servers.

    One row per server: id, name, transport, command or URL, enabled.
    """
    loaded = load(ctx)
    rows = []
    for sid, server in loaded.config.servers.items():
        mcp = server
        shown = " ".join([mcp.command or "", *mcp.args]).strip() if mcp.command else mcp.url
        # URL credentials and configured secret values never reach the terminal.
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
    print_table(f"{len(rows)} MCP servers ({loaded.path})", columns, rows_text, wide=wide)


@app.command("status", cls=PlainCommand)
def status_cmd(
    ctx: typer.Context, ids: IdsArg = None, wide: WideOpt = False, as_json: JsonOpt = False
) -> None:
    """Show each server's state and last error.

    Also its cached tool count and last refresh.

    Read from the on-disk catalog: nothing is started. States: cached (listed before),
    cold (never listed: run `pegboard servers refresh`), failed (with the error), disabled.
    """
    loaded = load(ctx)
    wanted = _check_ids(loaded, ids)
    runtime = _runtime(loaded)
    try:
        statuses = [runtime.catalog.status(sid) for sid in wanted]
    finally:
        runtime.catalog.store.close()
    if as_json:
        echo_json([_status_row(st, runtime) for st in statuses])
        return
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
    print_excluded(runtime.excluded(), wanted)
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
    loaded = load(ctx)
    wanted = [sid for sid in _check_ids(loaded, ids) if loaded.config.servers[sid].enabled]
    runtime = _runtime(loaded)
    results: dict[str, dict[str, object]] = {}

    async def body() -> None:
        from rich.console import Console  # lazy (start-up time)
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        limiter = anyio.CapacityLimiter(max(1, concurrency))
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with Progress(
            *columns,
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
            disable=as_json,
        ) as progress:
            task = progress.add_task("refreshing MCP servers", total=len(wanted))

            async def one(sid: str) -> None:
                async with limiter:
                    started = time.perf_counter()
                    try:
                        tools = await runtime.catalog.refresh_tools(sid)
                        results[sid] = {"id": sid, "ok": True, "tools": len(tools)}
                    except Exception as exc:
                        results[sid] = {"id": sid, "ok": False, "error": str(exc)}
                    results[sid]["seconds"] = round(time.perf_counter() - started, 3)
                    progress.advance(task)

            async with runtime.running(), anyio.create_task_group() as tg:
                for sid in wanted:
                    tg.start_soon(one, sid)

    run(body)
    rows = [results[sid] for sid in wanted]
    if as_json:
        echo_json(rows)
    else:
        for r in rows:
            outcome = f"{r['tools']} tools" if r["ok"] else f"failed: {r['error']}"
            typer.echo(f"{r['id']}: {outcome} ({r['seconds']} s)")
    if any(not r["ok"] for r in rows):
        raise typer.Exit(EXIT_FAILED)


def _set_enabled(ctx: typer.Context, server_id: str, enabled: bool) -> None:
    loaded = load(ctx)
    _check_ids(loaded, [server_id])
    raw = dict(loaded.raw)
    servers = {k: dict(v) for k, v in raw.get("servers", {}).items()}
    if enabled:
        servers[server_id].pop("enabled", None)
    else:
        servers[server_id]["enabled"] = False
    raw["servers"] = servers
    try:
        write_config(loaded.path, raw)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    word = "enabled" if enabled else "disabled"
    typer.echo(f"{server_id} {word} in {loaded.path} (a running pegboard serve follows at once)")


# Unknown options belong to the server's command (`servers add fs npx -y pkg` without --).
app.command("add", cls=PlainCommand, context_settings={"ignore_unknown_options": True})(
    servers_add.add_cmd
)


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


@app.command("logs")
def logs_cmd(
    ctx: typer.Context, server_id: Annotated[str, typer.Argument(help="Server id.")]
) -> None:
    """Print what the server wrote to stderr during its last start (up to 64 KB), with the
    values of its configured env and headers masked."""
    from pegboard.mcp.transport import stderr_path

    loaded = load(ctx)
    _check_ids(loaded, [server_id])
    server = loaded.config.servers[server_id]
    path = stderr_path(loaded.stderr_dir, server_id)
    assert path is not None
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        fail(
            f"no stderr kept for {server_id} yet: it has not been started since "
            f"(try `pegboard servers refresh {server_id}`)",
            EXIT_NOT_FOUND,
        )
    typer.echo(mask(text, server.secrets), nl=False)

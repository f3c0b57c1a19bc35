"""``pegboard serve``: the registry as one MCP server in front of all configured servers."""

from __future__ import annotations

import logging
import signal
import sys
from functools import partial
from typing import TYPE_CHECKING, Annotated

import anyio
import typer

from pegboard._lazy import import_burst
from pegboard.cli._common import EXIT_USAGE, fail, load, run, state
from pegboard.core.wording import plural
from pegboard.deferral.defer import DEFAULT_CONTEXT_WINDOW
from pegboard.errors import ConfigError, PegboardError
from pegboard.service import Service

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from pegboard.config.model import AuthConfig
    from pegboard.core.principal import Principal
    from pegboard.gateway.oauth import JwtVerifier
    from pegboard.gateway.server import Gateway
    from pegboard.runtime import ToolRuntime


async def until_signal(scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` on SIGTERM/SIGINT/SIGHUP, so children are stopped before exit."""
    if sys.platform == "win32":  # no signal receivers there; Ctrl-C still interrupts
        return
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for _ in signals:
            scope.cancel()
            return


def serve(
    ctx: typer.Context,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")
    ] = False,
    host: Annotated[
        str | None, typer.Option(help="Bind address for --http (default 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(help="Port for --http (default 8765; 0 = any free port).", show_default=False),
    ] = None,
    profile: Annotated[
        str | None, typer.Option("--profile", "-p", help="Profile to serve (default: default).")
    ] = None,
    no_defer: Annotated[
        bool, typer.Option("--no-defer", help="Expose every tool inline; no meta-tools.")
    ] = False,
    context_window: Annotated[
        int | None,
        typer.Option(
            metavar="TOKENS",
            help="Context window of the client's model; decides deferral "
            f"(default {DEFAULT_CONTEXT_WINDOW}).",
        ),
    ] = None,
    log_level: Annotated[
        str, typer.Option(metavar="LEVEL", help="Log level on stderr: debug, info, warning.")
    ] = "warning",
) -> None:
    """Serve all configured MCP servers as one MCP server.

    Speaks MCP over stdio (the default) or streamable HTTP (--http).

    tools/list is answered at once from the catalog cache; servers start in the background.
    Over --http, a non-loopback --host needs a bearer token ([gateway] token or
    PEGBOARD_TOKEN). Enabling or disabling a server, or editing the profile, in the config
    file takes effect at once (clients get tools/list_changed). Stops every child server on
    exit (EOF on stdin, SIGTERM, Ctrl-C).
    """
    from pegboard.search.threads import one_blas_thread

    one_blas_thread()  # before anything loads numpy
    # Lazy: the gateway and the runtime import the MCP SDK, which no other command needs.
    with import_burst():
        from pegboard.core.memory import HeapTrimmer
        from pegboard.gateway.compose import gateway_for, stdio_launches
        from pegboard.gateway.tracing import configure_from_env
        from pegboard.gateway.transports import (
            bind_listening_socket,
            check_port,
            is_loopback,
            serve_http,
            serve_stdio,
        )
        from pegboard.gateway.warmup import ready_search_calls, searching, warm_search_index
        from pegboard.runtime import RuntimeOptions
        from pegboard.service.admin_link import approval_pages, served_admin

    if context_window is not None and context_window <= 0:
        fail(
            f"--context-window {context_window}: give the model's context window in tokens, "
            f"a positive number such as {DEFAULT_CONTEXT_WINDOW}",
            EXIT_USAGE,
        )
    if port is not None:
        try:
            check_port(port)
        except ConfigError as exc:
            fail(f"--{exc}", EXIT_USAGE)
    level = logging.getLevelName(log_level.upper())
    if not isinstance(level, int):
        fail(f"--log-level {log_level}: use debug, info, warning or error", EXIT_USAGE)
    logging.basicConfig(level=level, format="pegboard %(levelname)s %(name)s: %(message)s")
    loaded = load(ctx)
    gateway_cfg = loaded.config.gateway
    bind = host or gateway_cfg.host
    token = loaded.gateway_token
    auth = loaded.config.auth
    if http and auth.enabled and token:
        fail(
            f"both [gateway] token (or PEGBOARD_TOKEN) and [auth] are set in {loaded.path}: "
            "use the token for one user or [auth] for a team, not both",
            EXIT_USAGE,
        )
    if http and not is_loopback(bind) and not token and not auth.enabled:
        fail(
            f"--host {bind} is not a loopback address: set a bearer token ([gateway] token in "
            f"{loaded.path} or PEGBOARD_TOKEN) or bind 127.0.0.1",
            EXIT_USAGE,
        )
    # Bound before anything starts: a port in use is one line, not every upstream started
    # and stopped again first.
    sock = None
    if http:
        try:
            sock = bind_listening_socket(bind, port if port is not None else gateway_cfg.port)
        except ConfigError as exc:
            fail(str(exc), EXIT_USAGE)
    options = RuntimeOptions(
        profile=profile,
        context_window=context_window,
        defer=False if no_defer else None,
        build_index_apart=True,
    )
    try:
        runtime = state(ctx).runtime_factory(loaded, options)
    except PegboardError as exc:
        fail(str(exc), EXIT_USAGE)
    # Open the stores before saying anything: an unreachable team store is one line, exit 2.
    run(runtime.start)

    _announce(loaded.path, runtime, "streamable HTTP" if http else "stdio")
    if no_defer and runtime.surface.tool_exec is not None:
        print(
            "pegboard serve: --no-defer: tool_exec ([meta] tool_exec = true) is offered only "
            "beside the meta-tools of deferred tools, so it is off",
            file=sys.stderr,
            flush=True,
        )

    # The start's freed heap goes back to the system, and so does each later burst's (a
    # listing of an upstream, the search index loaded): RSS is what serve holds.
    trimmer = HeapTrimmer()
    trimmer.install()
    trimmer.soon()

    async def body() -> None:
        configure_from_env()  # OTEL_* (off without them); before the gateway reads it
        gateway, content = gateway_for(runtime)
        served = served_admin(bind, sock.getsockname()[1]) if sock is not None else None
        gateway.pages.approval_page = approval_pages(gateway_cfg.admin_url, served, loaded.data_dir)
        async with runtime.running(), anyio.create_task_group() as tg:
            tg.start_soon(content.run, gateway.content_changed)
            tg.start_soon(until_signal, tg.cancel_scope)
            tg.start_soon(runtime.watch_config)
            tg.start_soon(runtime.share_replica_state)
            offered = partial(searching, runtime.surface)
            loop = anyio.lowlevel.current_token()

            def ready() -> None:  # in the warm-up thread, the index loaded
                ready_search_calls(runtime.surface)
                # the next start's snapshot gets the search section (:mod:`gateway.early_search`)
                anyio.from_thread.run_sync(gateway.snapshot_due.set, token=loop)

            tg.start_soon(warm_search_index, runtime.index, gateway.client_seen, offered, ready)
            if http:
                verifier = _verifier(auth)
                await serve_http(
                    gateway,
                    host=bind,
                    token=token,
                    verifier=verifier,
                    sock=sock,
                    admin=_admin(runtime, gateway, token, verifier, auth, is_loopback(bind)),
                )
            else:
                await serve_stdio(gateway, stdio_launches(runtime))
            tg.cancel_scope.cancel()

    try:
        run(body, fast_loop=True)
    finally:
        trimmer.close()


def _admin(
    runtime: ToolRuntime,
    gateway: Gateway,
    token: str | None,
    verifier: JwtVerifier | None,
    auth: AuthConfig,
    loopback: bool,
) -> ASGIApp:
    """The admin UI at ``/admin`` beside the MCP endpoint, with the gateway's authentication."""
    from pegboard.admin.app import AdminState, ClientSession, admin_app
    from pegboard.admin.security import AdminAuth

    check = None
    if verifier is not None:
        from pegboard.gateway.identity import token_principal

        async def check(credential: str) -> Principal | None:
            assert verifier is not None
            return token_principal(await verifier.verify_token(credential))

    def sessions() -> list[ClientSession]:
        return [ClientSession(**c) for c in gateway.hub.connections()]

    from pegboard.admin.metrics import GatewayMetrics

    services = Service.of(runtime)
    metrics = GatewayMetrics(services, runtime.events)
    admin_auth = AdminAuth(token=token, verify=check, admins=auth.admins, loopback=loopback)
    return admin_app(AdminState(services, admin_auth, sessions=sessions, metrics=metrics))


def _verifier(auth: AuthConfig) -> JwtVerifier | None:
    if not auth.enabled:
        return None
    from pegboard.gateway.oauth import JwtVerifier

    return JwtVerifier(auth)


def _announce(config_path: object, runtime: ToolRuntime, transport: str) -> None:
    """One line on stderr, so a person who starts ``serve`` by hand sees what it serves.

    MCP clients show a server's stderr in their logs; stdout stays the JSON-RPC stream.
    """
    servers = runtime.loaded.config.servers
    enabled = sum(1 for server in servers.values() if server.enabled)
    cached = Service.of(runtime).tools.cached_mcp_tools()
    line = (
        f"pegboard serve: MCP over {transport}; {enabled} of {plural(len(servers), 'MCP server')} "
        f"enabled, {plural(cached, 'cached tool')} (config: {config_path})"
    )
    if not servers:
        line += (
            ". No MCP servers yet: add some with "
            "`pegboard config import claude_desktop_config.json`"
        )
    print(line, file=sys.stderr, flush=True)

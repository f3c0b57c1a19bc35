"""``pegboard ui``: the admin UI on 127.0.0.1 for this config and data directory."""

from __future__ import annotations

import secrets
import sys
import webbrowser
from typing import Annotated

import anyio
import typer

from pegboard.cli._common import EXIT_USAGE, fail, run, service
from pegboard.errors import ConfigError

DEFAULT_PORT = 8766


def ui(
    ctx: typer.Context,
    port: Annotated[
        int, typer.Option(help="Port on 127.0.0.1 (0 = any free port).")
    ] = DEFAULT_PORT,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="Open the page in the browser.")
    ] = True,
) -> None:
    """The admin web UI: servers, tools, approvals, audit.

    Serves 127.0.0.1 only. The address printed (and opened) carries a one-time key that logs
    that browser in; other local users' browsers have no way in. Reads the same data directory
    as `pegboard serve`, so a stdio gateway's pending approvals appear here too. Ctrl-C stops it.
    """
    from pegboard.admin.app import AdminState, admin_app
    from pegboard.admin.security import AdminAuth
    from pegboard.cli.serve_cmd import until_signal
    from pegboard.gateway.transports import bind_listening_socket, check_port, serve_asgi
    from pegboard.runtime import RuntimeOptions
    from pegboard.service.admin_link import announced_ui

    try:
        check_port(port)
        sock = bind_listening_socket("127.0.0.1", port)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    services = service(ctx, RuntimeOptions(prewarm=False))
    key = secrets.token_urlsafe(24)
    app = admin_app(AdminState(services, AdminAuth(login_key=key, loopback=True)))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}/admin"
    url = f"{base}/login?key={key}"

    async def body() -> None:
        await services.runtime.start()
        print(f"pegboard admin UI on {url}", file=sys.stderr, flush=True)
        if open_browser:
            await anyio.to_thread.run_sync(webbrowser.open, url)
        try:
            # a stdio gateway on this data directory links its approvals to these pages
            with announced_ui(services.loaded.data_dir, base):
                async with anyio.create_task_group() as tg:
                    # SIGTERM, SIGINT, SIGHUP stop it cleanly (the address note goes too)
                    tg.start_soon(until_signal, tg.cancel_scope)
                    await serve_asgi(app, sock)
                    tg.cancel_scope.cancel()
        finally:
            services.close()

    run(body)

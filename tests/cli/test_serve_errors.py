"""``pegboard serve``: bad input is one line naming the fix; a signal stops it cleanly."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.streams.text import TextReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.cli.conftest import Invoke
from tests.gateway.harness import (
    PEGBOARD,
    STARTUP_BOUND,
    gateway_env,
    run_cli,
    scripted_server,
    write_config,
)

ANNOUNCE = "pegboard serve: MCP over"


def error_lines(stderr: str) -> list[str]:
    """stderr without the start-up announcement (the line a person starting serve sees)."""
    return [line for line in stderr.splitlines() if not line.startswith(ANNOUNCE)]


def test_a_port_out_of_range_is_one_line_and_exit_2(invoke: Invoke) -> None:
    result = invoke("serve", "--http", "--port", "99999")

    assert result.exit_code == 2
    assert (
        result.stderr == "error: --port 99999 is out of range: use 0-65535 (0 picks a free port)\n"
    )


def test_a_negative_context_window_is_refused_with_an_example(invoke: Invoke) -> None:
    result = invoke("serve", "--context-window", "-5")

    assert result.exit_code == 2
    assert result.stderr == (
        "error: --context-window -5: give the model's context window in tokens, a positive "
        "number such as 200000\n"
    )


def test_a_missing_config_named_by_the_flag_is_an_error_not_an_empty_gateway(
    invoke: Invoke, tmp_path: Path
) -> None:
    missing = tmp_path / "typo.toml"

    for args in (("serve",), ("tools", "list"), ("servers", "list")):
        result = invoke("--config", str(missing), *args)

        assert result.exit_code == 2, args
        assert result.stderr == (
            f"error: --config {missing}: no such file; check the path, create it with "
            f"`pegboard --config {missing} servers add ...` or `config import`, or leave out "
            "--config to use $PEGBOARD_CONFIG or the default config\n"
        )


def test_config_path_still_accepts_a_config_that_is_not_created_yet(
    invoke: Invoke, tmp_path: Path
) -> None:
    result = invoke("--config", str(tmp_path / "new.toml"), "config", "path")

    assert result.exit_code == 0
    assert "(not created yet: defaults apply)" in result.stdout


@pytest.mark.anyio
async def test_a_port_in_use_is_one_line_naming_the_option_and_starts_no_upstream(
    tmp_path: Path,
) -> None:
    started = tmp_path / "started.log"  # the server appends its pid here when it starts
    write_config(tmp_path, {"servers": {"box": scripted_server("--log", str(started))}})
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]

        code, _, stderr = await run_cli(tmp_path, "serve", "--http", "--port", str(port))

    assert code == 2
    assert error_lines(stderr) == [
        f"error: 127.0.0.1:{port} is already in use (another pegboard serve?): stop that "
        "process or choose another port with --port or [gateway] port (0 picks a free one)"
    ]
    # the port is bound before the runtime starts anything (it has not even announced)
    assert ANNOUNCE not in stderr
    assert not started.exists()


async def _read_url(stderr: TextReceiveStream) -> tuple[str, str]:
    seen = ""
    async for chunk in stderr:
        seen += chunk
        for line in seen.splitlines():
            if line.startswith("pegboard serving MCP on "):
                return line.removeprefix("pegboard serving MCP on "), seen
    raise AssertionError(f"serve exited before serving: {seen}")


@pytest.mark.anyio
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_stops_http_serving_with_exit_0_and_nothing_on_stderr(
    tmp_path: Path, signum: signal.Signals
) -> None:
    write_config(tmp_path, {})
    args = [PEGBOARD, "serve", "--http", "--port", "0"]
    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(args, env=gateway_env(tmp_path)) as process:
            assert process.stderr is not None
            stderr = TextReceiveStream(process.stderr)
            url, startup = await _read_url(stderr)
            # A connected client keeps its event stream (GET /mcp) open while the signal
            # comes: the case that printed CancelledError tracebacks.
            async with (
                httpx2.AsyncClient() as http,
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
            ):
                await client.list_tools()
                process.send_signal(signum)
                code = await process.wait()
            rest = "".join([chunk async for chunk in stderr])

    assert code == 0
    assert error_lines(startup + rest) == [f"pegboard serving MCP on {url}"]

from pathlib import Path

import pytest

from pegboard.cli.serve_cmd import _announce
from pegboard.config import load_config
from pegboard.runtime import RuntimeOptions, ToolRuntime
from tests.cli.conftest import Invoke, sdk_server, warm_cache, write


def test_a_non_loopback_bind_without_a_token_exits_2(invoke: Invoke) -> None:
    result = invoke("serve", "--http", "--host", "0.0.0.0")

    assert result.exit_code == 2
    assert "--host 0.0.0.0 is not a loopback address: set a bearer token" in result.stderr


def test_an_unknown_profile_exits_2_listing_the_known_ones(
    invoke: Invoke, config_path: Path
) -> None:
    write(config_path, {"profiles": {"work": {"mcp_mode": "disabled"}}})

    result = invoke("serve", "--profile", "play")

    assert result.exit_code == 2
    assert "unknown profile 'play'; known profiles: default, work" in result.stderr


def test_serve_help_documents_the_transport_and_deferral_options(invoke: Invoke) -> None:
    result = invoke("serve", "--help")

    for option in ("--http", "--host", "--port", "--profile", "--no-defer", "--context-window"):
        assert option in result.stdout


def test_serve_announces_what_it_serves_on_stderr(
    config_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PEGBOARD_DATA_DIR", str(tmp_path / "data"))
    write(
        config_path, {"servers": {"files": sdk_server(), "off": {**sdk_server(), "enabled": False}}}
    )
    warm_cache(config_path, "files", [{"name": "read", "inputSchema": {"type": "object"}}])
    runtime = ToolRuntime(load_config(config_path), RuntimeOptions())

    _announce(config_path, runtime, "stdio")

    assert capsys.readouterr().err == (
        f"pegboard serve: MCP over stdio; 1 of 2 MCP servers enabled, 1 cached tool "
        f"(config: {config_path})\n"
    )


def test_serve_with_no_servers_says_how_to_add_them(
    config_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PEGBOARD_DATA_DIR", str(tmp_path / "data"))
    runtime = ToolRuntime(load_config(config_path), RuntimeOptions())

    _announce(config_path, runtime, "streamable HTTP")

    err = capsys.readouterr().err
    assert err.startswith("pegboard serve: MCP over streamable HTTP; 0 of 0 MCP servers enabled")
    assert err.endswith(
        "No MCP servers yet: add some with `pegboard config import claude_desktop_config.json`\n"
    )

from pathlib import Path

from tests.cli.conftest import Invoke, write


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

"""Attack: secrets written where people look (``config show`` in its four forms, ``servers
list``, chat's "endpoint unreachable" line): ``user:password@`` in a model's ``base_url``,
credential literals on a server's command line (``--api-key=sk-...``, ``--token xyz``).

Held: every such value is masked wherever it is shown; harmless arguments stay readable.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from pegboard.core.redact import redact_args
from tests.cli.conftest import Invoke, write

PASSWORD = "hunter2-model-pw"
SECRETS = (
    PASSWORD,
    "sk-live-arg-7654321",
    "xyz-token-value",
    "ghp_abcdef1234567890",
    "pg-pass-99",
    "bearer-after-flag",
)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _config(config_path: Path, port: int = 9) -> None:
    args = [
        "server.py",
        "--api-key=sk-live-arg-7654321",
        "--token",
        "xyz-token-value",
        "--verbose",
        "ghp_abcdef1234567890",
        "postgres://app:pg-pass-99@db.internal/x",
        "--auth",
        "bearer-after-flag",
        "--port=8080",
    ]
    write(
        config_path,
        {
            "servers": {"s": {"command": "/nonexistent/python", "args": args}},
            "models": {
                "local": {
                    "kind": "openai",
                    "model": "m",
                    "base_url": f"http://admin:{PASSWORD}@127.0.0.1:{port}/v1",
                    "max_retries": 0,
                    "timeout": 10.0,
                }
            },
        },
    )


@pytest.mark.parametrize(
    "form",
    [
        ("config", "show"),
        ("config", "show", "--json"),
        ("config", "show", "--effective"),
        ("config", "show", "--effective", "--json"),
        ("servers", "list"),
        ("servers", "list", "--json"),
        ("servers", "list", "--wide"),
    ],
)
def test_no_form_of_config_show_or_servers_list_shows_a_credential(
    config_path: Path, invoke: Invoke, form: tuple[str, ...]
) -> None:
    _config(config_path)
    result = invoke(*form)

    assert result.exit_code == 0, result.stderr
    shown = result.stdout + result.stderr
    for secret in SECRETS:
        assert secret not in shown
    assert "--port=8080" in shown  # harmless arguments stay readable
    assert "--verbose" in shown


def test_config_show_json_masks_exactly_the_credentials(config_path: Path, invoke: Invoke) -> None:
    _config(config_path)
    data = json.loads(invoke("config", "show", "--json").stdout)

    assert data["models"]["local"]["base_url"] == "http://***@127.0.0.1:9/v1"
    assert data["servers"]["s"]["args"] == [
        "server.py",
        "--api-key=***",
        "--token",
        "***",
        "--verbose",
        "***",
        "postgres://***@db.internal/x",
        "--auth",
        "***",
        "--port=8080",
    ]


def test_chats_unreachable_endpoint_line_hides_the_base_url_password(
    config_path: Path, invoke: Invoke
) -> None:
    port = _closed_port()
    _config(config_path, port)
    result = invoke("chat", "--once", "hi")

    assert result.exit_code == 1
    assert PASSWORD not in result.stderr
    assert result.stderr.startswith(
        f"error: Model endpoint http://***@127.0.0.1:{port}/v1 is unreachable"
    )


def test_redact_args_keeps_flags_and_paths() -> None:
    args = ["-v", "--dir", "/tmp/x", "--keyfile=/etc/k.pem", "run", "--", "sk-"]
    assert redact_args(args) == ["-v", "--dir", "/tmp/x", "--keyfile=***", "run", "--", "***"]

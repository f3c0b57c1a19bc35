"""First starts get their own, long timeout; ``servers logs`` shows the last start's stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.cli.conftest import Invoke, write

SCRIPTED = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "scripted.py"
SECRET = "s3cret-token-value"


def _slow(seconds: float) -> dict[str, object]:
    return {
        "command": sys.executable,
        "args": [str(SCRIPTED), "--slow-start", str(seconds)],
        "env": {"TOKEN": SECRET},
        "connect_timeout": 1.0,
    }


def test_a_first_start_slower_than_connect_timeout_comes_up_and_a_later_one_times_out(
    invoke: Invoke, config_path: Path
) -> None:
    write(config_path, {"servers": {"slow": _slow(3)}})

    first = invoke("servers", "refresh", "slow")  # nothing cached: first_connect_timeout
    again = invoke("servers", "refresh", "slow")  # tools cached: connect_timeout (1 s)

    assert first.exit_code == 0, first.output
    assert "slow: 3 tools" in first.output
    assert again.exit_code == 1
    assert "no answer to initialize within 1s (raise connect_timeout in [servers.slow])" in (
        again.output
    )


def test_servers_logs_shows_the_last_start_with_secret_values_masked(
    invoke: Invoke, config_path: Path
) -> None:
    write(config_path, {"servers": {"slow": _slow(0.1)}})
    assert invoke("servers", "refresh", "slow").exit_code == 0

    logs = invoke("servers", "logs", "slow")

    assert logs.exit_code == 0
    assert logs.output == "installing the package (token ***)...\ninstalled\n"


def test_servers_logs_of_a_server_never_started_says_so(invoke: Invoke, config_path: Path) -> None:
    write(config_path, {"servers": {"slow": _slow(0.1)}})

    logs = invoke("servers", "logs", "slow")

    assert logs.exit_code == 3
    assert "no stderr kept for slow yet" in logs.output


def test_servers_logs_has_plain_help_and_json(invoke: Invoke, config_path: Path) -> None:
    write(config_path, {"servers": {"slow": _slow(0.1)}})
    assert invoke("servers", "refresh", "slow").exit_code == 0

    logs = invoke("servers", "logs", "slow", "--json")
    usage = invoke("servers", "logs", "--help")

    assert logs.exit_code == 0
    data = json.loads(logs.stdout)
    assert (data["id"], data["stderr"]) == (
        "slow",
        "installing the package (token ***)...\ninstalled\n",
    )
    assert Path(data["path"]).read_text(encoding="utf-8").endswith("installed\n")
    assert usage.stdout.startswith("Usage: pegboard servers logs [OPTIONS] SERVER_ID\n")
    assert "  --json  " in usage.stdout
    for rich_box in ("╭", "│", "─"):
        assert rich_box not in usage.stdout

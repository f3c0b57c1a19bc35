import json
from pathlib import Path

from tests.cli.conftest import Invoke, as_json, write


def test_config_path_reports_the_file_and_data_dir(
    invoke: Invoke, config_path: Path, tmp_path: Path
) -> None:
    result = invoke("config", "path", "--json")

    assert result.exit_code == 0
    assert as_json(result) == {
        "config": str(config_path),
        "exists": False,
        "data_dir": str(tmp_path / "data"),
        "catalog": str(tmp_path / "data" / "catalog.sqlite3"),
    }


def test_the_global_config_option_wins_over_the_environment(invoke: Invoke, tmp_path: Path) -> None:
    other = tmp_path / "other.toml"
    other.write_text("context_window = 5\n", encoding="utf-8")

    result = invoke("--config", str(other), "config", "show", "--json")

    assert as_json(result) == {"context_window": 5}


def test_config_show_effective_includes_defaults(invoke: Invoke) -> None:
    shown = as_json(invoke("config", "show", "--effective", "--json"))

    assert shown["meta"] == {"tool_exec": False, "defer": True, "search": "dense"}
    assert shown["gateway"] == {"host": "127.0.0.1", "port": 8765}


def test_an_invalid_config_exits_2_naming_the_key(invoke: Invoke, config_path: Path) -> None:
    config_path.write_text('[meta]\ntool_exec = "yes please"\n', encoding="utf-8")

    result = invoke("config", "show")

    assert result.exit_code == 2
    assert "meta.tool_exec: Input should be a valid boolean" in result.stderr


def test_import_dry_run_prints_the_diff_and_writes_nothing(
    invoke: Invoke, config_path: Path, tmp_path: Path
) -> None:
    source = tmp_path / "claude_desktop_config.json"
    source.write_text(
        json.dumps({"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}),
        encoding="utf-8",
    )

    result = invoke("config", "import", str(source), "--dry-run")

    assert result.exit_code == 0
    assert result.stdout.splitlines()[2:] == [
        "@@ -0,0 +1,3 @@",
        "+[servers.time]",
        '+command = "uvx"',
        '+args = ["mcp-server-time"]',
    ]
    assert "dry run: 1 added (time), 0 changed (-), 0 unchanged; nothing written" in result.stderr
    assert not config_path.exists()


def test_import_merges_servers_into_the_config(
    invoke: Invoke, config_path: Path, tmp_path: Path
) -> None:
    write(config_path, {"servers": {"old": {"command": "x"}}})
    source = tmp_path / "mcp.json"
    source.write_text(json.dumps({"servers": {"new": {"url": "http://127.0.0.1:1/mcp"}}}))

    result = invoke("config", "import", str(source))
    servers = as_json(invoke("config", "show", "--json"))["servers"]

    assert result.exit_code == 0
    assert servers == {"old": {"command": "x"}, "new": {"url": "http://127.0.0.1:1/mcp"}}


def test_import_of_a_missing_file_exits_2(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("config", "import", str(tmp_path / "nope.json"))

    assert result.exit_code == 2
    assert "nope.json: no such file" in result.stderr


def test_config_show_masks_secrets_unless_asked(invoke: Invoke, config_path: Path) -> None:
    write(
        config_path,
        {
            "servers": {"gh": {"command": "x", "env": {"GITHUB_TOKEN": "ghp_secret"}}},
            "web_search": {"b": {"type": "brave", "api_key": "k-secret"}},
            "gateway": {"token": "t-secret"},
        },
    )

    masked = invoke("config", "show")
    shown = as_json(invoke("config", "show", "--json", "--show-secrets"))

    assert "secret" not in masked.stdout
    assert 'GITHUB_TOKEN = "***"' in masked.stdout
    assert shown["servers"]["gh"]["env"] == {"GITHUB_TOKEN": "ghp_secret"}

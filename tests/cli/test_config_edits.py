"""The CLI's config edits keep the user's comments and layout; ``servers add``."""

import json
import tomllib
from pathlib import Path

from pegboard.config import load_config
from pegboard.mcp import SqliteCatalogStore
from tests.cli.conftest import Invoke, warm_cache

HAND_WRITTEN = """\
# My MCP servers, written by hand.
context_window = 128000  # the model I use

[servers.time]  # the clock
command = "uvx"
args = ["mcp-server-time"]  # pinned below
env = { TZ = "UTC" }

# GitHub needs a token from the keychain
[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
"""


def test_disable_then_enable_restores_the_hand_written_file_byte_for_byte(
    invoke: Invoke, config_path: Path
) -> None:
    config_path.write_text(HAND_WRITTEN, encoding="utf-8")

    disabled = invoke("servers", "disable", "time")
    after_disable = config_path.read_text(encoding="utf-8")
    enabled = invoke("servers", "enable", "time")

    assert (disabled.exit_code, enabled.exit_code) == (0, 0)
    assert after_disable == HAND_WRITTEN.replace(
        'env = { TZ = "UTC" }\n', 'env = { TZ = "UTC" }\nenabled = false\n'
    )
    assert config_path.read_text(encoding="utf-8") == HAND_WRITTEN


def test_import_keeps_comments_and_appends_the_new_server(
    invoke: Invoke, config_path: Path, tmp_path: Path
) -> None:
    config_path.write_text(HAND_WRITTEN, encoding="utf-8")
    source = tmp_path / "claude_desktop_config.json"
    server = {"command": "uvx", "args": ["mcp-server-fetch"], "env": {"DEBUG": "1"}}
    source.write_text(json.dumps({"mcpServers": {"fetch": server}}), encoding="utf-8")

    result = invoke("config", "import", str(source))

    assert result.exit_code == 0
    assert config_path.read_text(encoding="utf-8") == HAND_WRITTEN + (
        '\n[servers.fetch]\ncommand = "uvx"\nargs = ["mcp-server-fetch"]\nenv = {DEBUG = "1"}\n'
    )


def test_import_dry_run_masks_secret_looking_values_only(
    invoke: Invoke, config_path: Path, tmp_path: Path
) -> None:
    source = tmp_path / "mcp.json"
    env = {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_real", "LOG_LEVEL": "debug", "DB": "x://u:pw@h"}
    headers = {"Authorization": "Bearer abc", "X-Region": "eu"}
    servers = {
        "gh": {"command": "npx", "args": ["gh"], "env": env},
        "docs": {"url": "https://example.com/mcp", "headers": headers},
    }
    source.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")

    result = invoke("config", "import", str(source), "--dry-run")

    assert result.exit_code == 0
    added = [line for line in result.stdout.splitlines() if line.startswith("+") and "=" in line]
    assert '+env = {GITHUB_PERSONAL_ACCESS_TOKEN = "***", LOG_LEVEL = "debug", DB = "***"}' in added
    assert '+headers = {Authorization = "***", X-Region = "eu"}' in added
    assert "ghp_real" not in result.stdout
    assert not config_path.exists()


def test_servers_add_writes_a_stdio_server_after_the_existing_ones(
    invoke: Invoke, config_path: Path
) -> None:
    config_path.write_text(HAND_WRITTEN, encoding="utf-8")

    result = invoke(
        "servers", "add", "files", "--env", "ROOT=/srv", "--", "npx", "-y", "server-fs", "/srv"
    )

    assert result.exit_code == 0
    assert result.stdout == (
        f"added files (npx -y server-fs /srv) to {config_path}; "
        "list its tools with `pegboard servers refresh files`\n"
    )
    assert config_path.read_text(encoding="utf-8") == HAND_WRITTEN + (
        '\n[servers.files]\ncommand = "npx"\nargs = ["-y", "server-fs", "/srv"]\n'
        'env = {ROOT = "/srv"}\n'
    )


def test_servers_add_takes_the_command_without_double_dash_too(
    invoke: Invoke, config_path: Path
) -> None:
    result = invoke("servers", "add", "fs", "npx", "-y", "server-fs")

    assert result.exit_code == 0
    assert tomllib.loads(config_path.read_text(encoding="utf-8")) == {
        "servers": {"fs": {"command": "npx", "args": ["-y", "server-fs"]}}
    }


def test_servers_add_writes_a_remote_server_with_headers(invoke: Invoke, config_path: Path) -> None:
    result = invoke(
        "servers", "add", "docs", "--url", "https://example.com/mcp", "--header", "X-Team=core"
    )

    assert result.exit_code == 0
    assert tomllib.loads(config_path.read_text(encoding="utf-8")) == {
        "servers": {"docs": {"url": "https://example.com/mcp", "headers": {"X-Team": "core"}}}
    }


def test_servers_add_refuses_an_existing_id_naming_the_table(
    invoke: Invoke, config_path: Path
) -> None:
    config_path.write_text(HAND_WRITTEN, encoding="utf-8")

    result = invoke("servers", "add", "time", "--", "uvx", "other")

    assert result.exit_code == 2
    assert result.stderr == (
        f"error: server 'time' already exists in {config_path}; choose another id, or edit "
        "or remove [servers.time] there\n"
    )
    assert config_path.read_text(encoding="utf-8") == HAND_WRITTEN


def test_servers_add_refuses_bad_input_with_one_line_each(
    invoke: Invoke, config_path: Path
) -> None:
    cases = {
        ("my server", "--", "x"): "error: server id 'my server': use letters, digits, '-' and "
        "single '_' (it becomes part of every tool name), e.g. 'my-server'\n",
        ("z",): "error: give either a command after -- (pegboard servers add ID -- npx -y "
        "PACKAGE) or --url URL, not both or neither\n",
        ("z", "--url", "ftp://x"): "error: --url 'ftp://x': expected an http:// or https:// URL\n",
        ("z", "--urll", "https://x"): "error: unknown option --urll; a server's own options go "
        "after its command, behind --: pegboard servers add ID -- COMMAND ARGS...\n",
        ("z", "--url", "https://x", "--header", "novalue"): "error: --header 'novalue': "
        "expected KEY=VALUE, e.g. --header API_KEY=...\n",
    }
    for args, expected in cases.items():
        result = invoke("servers", "add", *args)

        assert (result.exit_code, result.stderr) == (2, expected), args
    assert not config_path.exists()


def test_a_config_that_cannot_be_written_is_an_error_not_a_traceback(
    invoke: Invoke, tmp_path: Path
) -> None:
    not_a_dir = tmp_path / "notes.txt"
    not_a_dir.write_text("a file, not a directory", encoding="utf-8")
    config = not_a_dir / "config.toml"

    result = invoke("--config", str(config), "servers", "add", "time", "--", "uvx", "x")

    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {config}: cannot be written (File exists); check that {not_a_dir} is a "
        "writable directory, or point --config elsewhere\n"
    )


def test_servers_remove_takes_out_one_table_and_its_profile_links_keeping_the_rest(
    invoke: Invoke, config_path: Path
) -> None:
    linked = (
        HAND_WRITTEN
        + '\n[profiles.work]  # only GitHub\nmcp_mode = "manual"\n'
        + 'mcp_servers = ["github", "time"]\n'
    )
    config_path.write_text(linked, encoding="utf-8")
    warm_cache(config_path, "github", [{"name": "create_issue", "inputSchema": {}}])

    removed = invoke("servers", "remove", "github")
    unknown = invoke("servers", "remove", "github")

    assert removed.exit_code == 0, removed.output
    assert removed.stdout == f"removed github from {config_path}, unlinked from profile work\n"
    assert config_path.read_text(encoding="utf-8") == (
        "# My MCP servers, written by hand.\n"
        "context_window = 128000  # the model I use\n"
        "\n"
        "[servers.time]  # the clock\n"
        'command = "uvx"\n'
        'args = ["mcp-server-time"]  # pinned below\n'
        'env = { TZ = "UTC" }\n'
        "\n"
        "[profiles.work]  # only GitHub\n"
        'mcp_mode = "manual"\n'
        'mcp_servers = ["time"]\n'
    )
    assert (unknown.exit_code, unknown.stderr) == (
        3,
        "error: unknown server id: github; configured: time\n",
    )
    store = SqliteCatalogStore(load_config(config_path).catalog_path)
    assert (store.get("github"), store.pins("github")) == (None, {})  # re-adding starts fresh
    store.close()

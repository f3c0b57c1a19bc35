"""Attacks through configuration: secrets echoed, blank ids, relative commands, import bombs,
loose booleans, bad tool names, a catalog table of the wrong shape (issue 14 items 4-6, 8, 10).
"""

from __future__ import annotations

import json
import sqlite3
import stat
import sys
from pathlib import Path

import pytest

from pegboard.config import parse_mcp_servers
from pegboard.errors import ConfigError
from pegboard.mcp import McpCatalog, SqliteCatalogStore, StoredServer
from tests.cli.conftest import Invoke, as_json, write
from tests.mcp.conftest import scripted

SECRET = "sk-live-0d5c2f9e8a7b6c41"


def _no_traceback(output: str) -> None:
    assert "Traceback" not in output
    assert SECRET not in output


# -- item 4: secrets never echoed ---------------------------------------------------------------
@pytest.mark.parametrize(
    "config",
    [
        {"servers": {"a": {"command": "x", "env": {"API_KEY": [SECRET]}}}},
        {"servers": {"a": {"command": "x", "env": [f"API_KEY={SECRET}"]}}},
        {"servers": {"a": {"url": "http://127.0.0.1:1/mcp", "headers": {"X-Key": [SECRET]}}}},
        {"servers": {"a": {"url": f"ftp://user:{SECRET}@127.0.0.1/mcp"}}},
        {"servers": {"a": {"command": "x", "args": [SECRET, 1]}}},
        {"gateway": {"token": [SECRET]}},
        {"web_search": {"w": {"type": "brave", "api_key": [SECRET]}}},
    ],
    ids=["env-value-list", "env-as-list", "header-list", "url-creds", "args", "token", "api-key"],
)
def test_validation_errors_never_echo_a_secret(
    invoke: Invoke, config_path: Path, config: dict[str, object]
) -> None:
    write(config_path, config)

    result = invoke("config", "show")

    assert result.exit_code == 2
    assert "invalid configuration" in result.stderr
    _no_traceback(result.output)


def test_config_show_and_servers_list_mask_url_credentials_and_secret_values(
    invoke: Invoke, config_path: Path
) -> None:
    write(
        config_path,
        {
            "servers": {
                "remote": {"url": f"https://bob:{SECRET}@127.0.0.1/mcp?api_key={SECRET}&x=1"},
                "local": {"command": "x", "args": [f"--token={SECRET}"], "env": {"K": SECRET}},
            }
        },
    )

    shown = invoke("config", "show")
    listed = invoke("servers", "list", "--json")

    assert shown.exit_code == listed.exit_code == 0
    _no_traceback(shown.output)
    _no_traceback(listed.output)
    targets = {row["id"]: row["target"] for row in as_json(listed)}
    assert targets == {
        "remote": "https://***@127.0.0.1/mcp?api_key=***&x=1",
        "local": "x --token=***",
    }


# -- item 5: ids validated on import and on load -------------------------------------------------
@pytest.mark.parametrize("sid", ["", "   ", "a/b", "x" * 65, "evil\u202eid", " pad"])
def test_a_bad_server_id_is_refused_on_import_and_nothing_is_written(
    invoke: Invoke, config_path: Path, tmp_path: Path, sid: str
) -> None:
    source = tmp_path / "claude.json"
    source.write_text(json.dumps({"mcpServers": {sid: {"command": "npx"}}}))

    result = invoke("config", "import", str(source))
    after = invoke("servers", "list")

    assert result.exit_code == 2
    assert "server id" in result.stderr
    _no_traceback(result.output)
    assert not config_path.exists()
    assert after.exit_code == 0


@pytest.mark.parametrize("sid", ["", " ", "a/b"])
def test_a_bad_server_id_in_the_config_file_is_one_clear_error(
    invoke: Invoke, config_path: Path, sid: str
) -> None:
    write(config_path, {"servers": {sid: {"command": "npx"}}})

    result = invoke("servers", "status")

    assert result.exit_code == 2
    assert "server id" in result.stderr
    _no_traceback(result.output)


# -- item 6: relative commands -------------------------------------------------------------------
def _booby_trap(folder: Path, marker: Path) -> None:
    """An executable ``x`` (and ``bin/x``) in ``folder`` that leaves ``marker`` when run."""
    for target in (folder / "x", folder / "bin" / "x"):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"#!{sys.executable}\nopen({str(marker)!r}, 'w').write('pwned')\n")
        target.chmod(target.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize("command", ["./x", "bin/x", "../checkout/x"])
def test_a_relative_command_never_runs_the_working_directorys_file(
    invoke: Invoke,
    config_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    checkout, marker = tmp_path / "checkout", tmp_path / "pwned"
    _booby_trap(checkout, marker)
    config_dir = tmp_path / "conf" / "inner"
    config_dir.mkdir(parents=True)
    monkeypatch.setenv("PEGBOARD_CONFIG", str(config_dir / "config.toml"))
    write(config_dir / "config.toml", {"servers": {"a": {"command": command}}})
    monkeypatch.chdir(checkout)  # pegboard run inside an untrusted checkout

    result = invoke("servers", "refresh")
    listed = as_json(invoke("servers", "list", "--json"))

    assert not marker.exists()
    assert result.exit_code == 1
    assert listed[0]["target"] == str((config_dir / command).resolve())


@pytest.mark.parametrize("command", ["./x", "bin/x"])
def test_a_relative_command_without_a_config_folder_is_refused(command: str) -> None:
    with pytest.raises(ConfigError, match=r"relative command .* has no config file"):
        parse_mcp_servers({"mcpServers": {"a": {"command": command}}})


def test_an_imported_relative_command_becomes_absolute_against_the_imported_file(
    invoke: Invoke, config_path: Path, tmp_path: Path
) -> None:
    source = tmp_path / "project" / ".vscode" / "mcp.json"
    source.parent.mkdir(parents=True)
    source.write_text(json.dumps({"servers": {"a": {"command": "./run.sh", "cwd": "."}}}))

    result = invoke("config", "import", str(source))
    server = as_json(invoke("config", "show", "--json"))["servers"]["a"]

    assert result.exit_code == 0
    assert server["command"] == str(source.parent / "run.sh")
    assert server["cwd"] == str(source.parent)


# -- item 8: import crashes ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "document",
    [
        json.dumps({"mcpServers": {"a": {"command": "x", "env": ["A=1"]}}}),
        json.dumps({"mcpServers": {"a": {"command": "x", "env": "A=1"}}}),
        json.dumps({"mcpServers": {"a": {"command": "x", "args": "one"}}}),
        json.dumps({"mcpServers": {"a": {"command": ["x"]}}}),
        json.dumps({"mcpServers": {"a": ["x"]}}),
        json.dumps({"mcpServers": ["x"]}),
        "[" * 50_000 + "]" * 50_000,
        '{"mcpServers": ' + '{"a": ' * 50_000 + "1" + "}" * 50_001,
    ],
    ids=["env-list", "env-str", "args-str", "command-list", "entry-list", "servers-list",
         "deep-array", "deep-object"],
)  # fmt: skip
def test_a_malformed_import_is_one_clear_error(
    invoke: Invoke, config_path: Path, tmp_path: Path, document: str
) -> None:
    source = tmp_path / "claude.json"
    source.write_text(document)

    result = invoke("config", "import", str(source))

    assert result.exit_code == 2
    _no_traceback(result.output)
    assert result.stderr.startswith("error:")
    assert not config_path.exists()


def test_a_deeply_nested_config_file_is_one_clear_error(invoke: Invoke, config_path: Path) -> None:
    config_path.write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")

    result = invoke("config", "show")

    assert result.exit_code == 2
    _no_traceback(result.output)


# -- item 10: strict booleans, tool names, the catalog table ------------------------------------
@pytest.mark.parametrize("value", ["yes", "no", 1, "true", None])
def test_disabled_must_be_a_real_boolean_on_import(
    invoke: Invoke, config_path: Path, tmp_path: Path, value: object
) -> None:
    source = tmp_path / "claude.json"
    source.write_text(json.dumps({"mcpServers": {"a": {"command": "x", "disabled": value}}}))

    result = invoke("config", "import", str(source))

    assert result.exit_code == 2
    assert "'disabled' must be true or false" in result.stderr
    assert not config_path.exists()


@pytest.mark.parametrize("value", ["yes", "false", 0])
def test_enabled_must_be_a_real_boolean_in_the_config(
    invoke: Invoke, config_path: Path, value: object
) -> None:
    write(config_path, {"servers": {"a": {"command": "x", "enabled": value}}})

    result = invoke("servers", "list")

    assert result.exit_code == 2
    assert "servers.a.enabled: Input should be a valid boolean" in result.stderr


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("x" * 129, "the tool name is 129 characters long (MCP allows 1-128)"),
        ("zero\u200bwidth", "the tool name contains an invisible character (U+200B)"),
        ("bidi\u202eevil", "the tool name contains an invisible character (U+202E)"),
        ("tag\U000e0041ged", "the tool name contains an invisible character (U+E0041)"),
        ("soft\u00adhyphen", "the tool name contains an invisible character (U+00AD)"),
        ("bell\x07", "the tool name contains an invisible character (U+0007)"),
        ("tab\tbed", "the tool name contains an invisible character (U+0009)"),
        (" lead", "the tool name begins or ends with a space"),
        ("trail ", "the tool name begins or ends with a space"),
    ],
)
async def test_overlong_and_misleading_tool_names_are_refused_with_the_reason(
    tmp_path: Path, name: str, reason: str
) -> None:
    names = ",".join(["ok", "y" * 128, name, "sp ace"])
    store = SqliteCatalogStore(tmp_path / "c.sqlite3")
    config = scripted("s", names=names)
    catalog = McpCatalog([config], store)
    async with catalog.running(prewarm=False):
        listed = sorted(t.name for t in await catalog.refresh_tools("s"))
        assert catalog.status("s").refused == ((name, reason),)

    assert listed == ["ok", "sp ace", "y" * 128]
    # The refusal survives in the cache: a later process (`servers status`) still shows it.
    assert McpCatalog([config], store).status("s").refused == ((name, reason),)
    store.close()


def test_an_empty_tool_name_in_the_cached_store_is_dropped(tmp_path: Path) -> None:
    store = SqliteCatalogStore(tmp_path / "c.sqlite3")
    config = scripted("s")
    good = {"name": "ok", "inputSchema": {"type": "object"}}
    tools = (good, {"name": "", "inputSchema": {"type": "object"}})
    store.put(StoredServer("s", fingerprint=config.fingerprint, tools=tools))

    catalog = McpCatalog([config], store)

    assert [t.name for t in catalog.list_tools("s")] == ["ok"]
    store.close()


def test_a_servers_table_with_wrong_columns_is_rebuilt_and_writes_work(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE servers (server_id TEXT PRIMARY KEY, blob TEXT)")
    db.execute("INSERT INTO servers VALUES ('s', 'junk')")
    db.execute("CREATE TABLE pins (a TEXT)")
    db.commit()
    db.close()

    store = SqliteCatalogStore(path)
    store.put(StoredServer("s", fingerprint="f", tools=()))
    store.set_pins("s", {"": "f"})

    assert store.persistent
    assert store.get("s") == StoredServer("s", fingerprint="f", tools=())
    assert store.pins("s") == {"": "f"}
    store.close()

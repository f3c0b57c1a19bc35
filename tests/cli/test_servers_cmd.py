from pathlib import Path

from tests.cli.conftest import Invoke, as_json, sdk_server, warm_cache, write

ADD = {
    "name": "add",
    "description": "Add two integers.",
    "inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}


def test_servers_list_shows_each_configured_server(invoke: Invoke, config_path: Path) -> None:
    write(
        config_path,
        {
            "servers": {
                "t": {"command": "uvx", "args": ["mcp-server-time"]},
                "r": {"url": "http://h/mcp"},
            }
        },
    )

    rows = as_json(invoke("servers", "list", "--json"))

    assert rows == [
        {
            "id": "t",
            "name": "t",
            "transport": "stdio",
            "target": "uvx mcp-server-time",
            "enabled": True,
        },
        {"id": "r", "name": "r", "transport": "http", "target": "http://h/mcp", "enabled": True},
    ]


def test_servers_status_reads_the_cache_without_starting_anything(
    invoke: Invoke, config_path: Path
) -> None:
    write(
        config_path,
        {"servers": {"warm": {"command": "/nonexistent/a"}, "cold": {"command": "/nonexistent/b"}}},
    )
    warm_cache(config_path, "warm", [ADD])

    rows = as_json(invoke("servers", "status", "--json"))

    assert [(r["id"], r["state"], r["tools"], r["last_refresh"]) for r in rows] == [
        ("warm", "cached", 1, 1_700_000_000.0),
        ("cold", "cold", 0, None),
    ]
    assert [r["excluded"] for r in rows] == [[], []]


def test_refresh_of_a_broken_server_exits_1_and_status_shows_the_error(
    invoke: Invoke, config_path: Path
) -> None:
    write(config_path, {"servers": {"broken": {"command": "/nonexistent/server"}}})

    refreshed = invoke("servers", "refresh", "--json")
    status = as_json(invoke("servers", "status", "broken", "--json"))[0]

    assert refreshed.exit_code == 1
    assert as_json(refreshed)[0]["ok"] is False
    assert status["state"] == "failed"
    assert status["error"] == "failed to start: command not found (No such file or directory)"


def test_refresh_caches_a_real_servers_tools(invoke: Invoke, config_path: Path) -> None:
    write(config_path, {"servers": {"toolbox": sdk_server()}})

    refreshed = invoke("servers", "refresh", "--json")
    status = as_json(invoke("servers", "status", "--json"))[0]

    assert refreshed.exit_code == 0
    assert as_json(refreshed)[0]["tools"] == status["tools"] >= 8  # the server may gain tools
    assert status["state"] == "cached"


def test_unknown_server_ids_exit_3(invoke: Invoke, config_path: Path) -> None:
    write(config_path, {"servers": {"a": {"command": "x"}}})

    result = invoke("servers", "status", "zzz")

    assert result.exit_code == 3
    assert "unknown server id: zzz; configured: a" in result.stderr


def test_disable_and_enable_edit_the_config_file(invoke: Invoke, config_path: Path) -> None:
    write(config_path, {"servers": {"a": {"command": "x"}}})

    invoke("servers", "disable", "a")
    disabled = as_json(invoke("servers", "list", "--json"))[0]["enabled"]
    invoke("servers", "enable", "a")

    assert disabled is False
    assert as_json(invoke("config", "show", "--json")) == {"servers": {"a": {"command": "x"}}}

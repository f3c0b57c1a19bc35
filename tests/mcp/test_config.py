import pytest

from pegboard.errors import ConfigError, McpError
from pegboard.mcp import McpCatalog, McpServerConfig, parse_mcp_servers


def test_claude_desktop_config_infers_stdio_and_http_transports() -> None:
    servers = parse_mcp_servers(
        {
            "mcpServers": {
                "files": {"command": "npx", "args": ["-y", "server-files"], "env": {"A": "1"}},
                "remote": {"url": "https://example.test/mcp", "headers": {"X-Key": "k"}},
                "legacy": {"type": "sse", "url": "https://example.test/sse"},
            }
        }
    )
    assert [(s.id, s.transport) for s in servers] == [
        ("files", "stdio"),
        ("remote", "http"),
        ("legacy", "sse"),
    ]
    assert servers[0].args == ("-y", "server-files")
    assert servers[0].env == {"A": "1"}
    assert servers[1].headers == {"X-Key": "k"}


def test_vscode_servers_key_and_streamable_http_alias_are_accepted() -> None:
    servers = parse_mcp_servers(
        {"servers": {"gh": {"type": "streamable-http", "url": "http://h/"}}}
    )
    assert servers[0].transport == "http"


def test_pegboard_fields_and_display_name() -> None:
    (server,) = parse_mcp_servers(
        {
            "mcpServers": {
                "gm": {
                    "command": "gmail-mcp",
                    "name": "Gmail",
                    "enabled": False,
                    "disabled_tools": ["delete"],
                    "force_prompt_tools": ["send"],
                    "call_timeout": 5,
                }
            }
        }
    )
    assert server.display_name == "Gmail"
    assert server.enabled is False
    assert server.is_tool_disabled("delete") is True
    assert server.is_force_prompt("send") is True
    assert server.call_timeout == 5.0


def test_bad_field_error_names_the_server_and_the_field() -> None:
    with pytest.raises(ConfigError, match=r"MCP server 'gh': field 'args'"):
        parse_mcp_servers({"mcpServers": {"gh": {"command": "x", "args": "not-a-list"}}})


def test_server_without_command_or_url_is_an_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"MCP server 'empty'.*'command'.*'url'"):
        parse_mcp_servers({"mcpServers": {"empty": {}}})


def test_unknown_transport_type_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"MCP server 'x'.*unknown transport type 'ws'"):
        parse_mcp_servers({"mcpServers": {"x": {"type": "ws", "url": "ws://h"}}})


def test_fingerprint_changes_with_command_args_env_url_or_headers_only() -> None:
    base = McpServerConfig(id="s", command="srv", args=("a",), env={"K": "v"})
    assert (
        base.fingerprint
        == McpServerConfig(
            id="s", command="srv", args=("a",), env={"K": "v"}, name="New"
        ).fingerprint
    )
    changed = [
        McpServerConfig(id="s", command="srv2", args=("a",), env={"K": "v"}),
        McpServerConfig(id="s", command="srv", args=("b",), env={"K": "v"}),
        McpServerConfig(id="s", command="srv", args=("a",), env={"K": "w"}),
    ]
    assert len({base.fingerprint, *(c.fingerprint for c in changed)}) == 4
    remote = McpServerConfig(id="r", url="http://h/mcp", headers={"A": "1"})
    assert (
        remote.fingerprint
        != McpServerConfig(id="r", url="http://h/mcp", headers={"A": "2"}).fingerprint
    )
    assert len(base.fingerprint) == 64


def test_fingerprint_changes_with_the_url_and_the_working_directory() -> None:
    remote = McpServerConfig(id="r", url="http://h/mcp")
    assert remote.fingerprint != McpServerConfig(id="r", url="http://other/mcp").fingerprint
    local = McpServerConfig(id="s", command="srv")
    assert local.fingerprint != McpServerConfig(id="s", command="srv", cwd="/srv").fingerprint
    assert local.fingerprint == McpServerConfig(id="s", command="srv", enabled=False).fingerprint


def test_default_timeouts_and_catalog_settings() -> None:
    server = McpServerConfig(id="s", command="srv")
    assert (server.connect_timeout, server.list_timeout, server.call_timeout) == (10.0, 15.0, 60.0)
    catalog = McpCatalog([server])
    settings = catalog.settings
    assert (settings.prewarm_concurrency, settings.empty_backoff, settings.failure_backoff) == (
        3,
        300.0,
        30.0,
    )


def test_unknown_and_duplicate_server_ids() -> None:
    catalog = McpCatalog([McpServerConfig(id="a", command="srv")])
    assert catalog.list_tools("nope") == []
    with pytest.raises(McpError, match=r"unknown MCP server 'nope'; configured: a"):
        catalog.status("nope")
    twice = [McpServerConfig(id="a", command="srv"), McpServerConfig(id="a", url="http://h/")]
    with pytest.raises(McpError, match=r"MCP server id 'a' is configured twice"):
        McpCatalog(twice)

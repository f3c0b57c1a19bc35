import json
import re
from pathlib import Path

import pytest

from pegboard.config import (
    CONFIG_ENV,
    DATA_DIR_ENV,
    load_config,
    plan_import,
    render_reference,
    resolve_config_path,
    write_config,
)
from pegboard.errors import ConfigError

README = Path(__file__).resolve().parents[1] / "README.md"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_missing_config_file_is_a_valid_empty_config(tmp_path: Path) -> None:
    loaded = load_config(tmp_path / "absent.toml")

    assert loaded.exists is False
    assert loaded.config.servers == {}
    assert loaded.config.meta.tool_exec is False
    assert loaded.config.profile().mcp_mode == "auto"


def test_config_path_prefers_the_argument_then_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "env.toml"))

    assert resolve_config_path(tmp_path / "arg.toml") == tmp_path / "arg.toml"
    assert resolve_config_path(None) == tmp_path / "env.toml"


def test_data_dir_comes_from_the_environment_then_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "c.toml", 'data_dir = "state"\n')
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)

    assert load_config(path).data_dir == tmp_path / "state"
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "elsewhere"))
    assert load_config(path).catalog_path == tmp_path / "elsewhere" / "catalog.sqlite3"


def test_a_full_config_maps_onto_server_and_assistant_settings(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "c.toml",
        """
context_window = 128000
default_profile = "work"

[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_TOKEN = "t" }
call_timeout = 5

[servers.remote]
url = "http://127.0.0.1:9/mcp"
type = "sse"

[profiles.work]
mcp_mode = "manual"
mcp_servers = ["github"]
web_search = true
web_search_provider = "sx"
disabled_tools = ["github/delete_repo"]

[web_search.sx]
type = "searxng"
url = "http://127.0.0.1:8888"
""",
    )

    config = load_config(path).config
    github = config.servers["github"]
    settings = config.profile().to_settings()

    assert (github.transport, github.command, github.args) == (
        "stdio",
        "npx",
        ("-y", "@modelcontextprotocol/server-github"),
    )
    assert github.call_timeout == 5
    assert config.servers["remote"].transport == "sse"
    assert settings.mcp_mode == "manual"
    assert settings.mcp_server_ids == ("github",)
    assert settings.enable_web_search is True
    assert settings.disabled_tools == frozenset({"github/delete_repo"})
    assert config.context_window == 128000


def test_an_invalid_value_names_the_file_the_key_and_the_expectation(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.toml", '[profiles.default]\nmcp_mode = "on"\n')

    with pytest.raises(ConfigError) as info:
        load_config(path)

    assert str(info.value) == (
        f"{path}: invalid configuration (1 problem):\n"
        "  profiles.default.mcp_mode: Input should be 'disabled', 'manual' or 'auto'; got 'on'"
    )


def test_an_unknown_key_is_an_error_not_silently_ignored(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.toml", "[meta]\ntool_exce = true\n")

    with pytest.raises(ConfigError, match=r"meta\.tool_exce: unknown key"):
        load_config(path)


def test_a_server_needs_exactly_one_of_command_and_url(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.toml", '[servers.x]\nargs = ["a"]\n')

    with pytest.raises(ConfigError, match=r"servers\.x: set exactly one of 'command'"):
        load_config(path)


def test_a_profile_linking_an_unknown_server_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.toml", '[profiles.p]\nmcp_servers = ["nope"]\n')

    with pytest.raises(ConfigError, match=r"profiles\.p\.mcp_servers names unknown server 'nope'"):
        load_config(path)


def test_broken_toml_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.toml", "servers = [\n")

    with pytest.raises(ConfigError, match=re.escape(f"{path}: not valid TOML")):
        load_config(path)


def test_an_unknown_profile_lists_the_known_ones() -> None:
    config = load_config("/nonexistent/pegboard.toml").config

    with pytest.raises(ConfigError, match="unknown profile 'x'; known profiles: default"):
        config.profile("x")


MODELS = """\
default_model = "local"

[models.local]
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"
model = "qwen3:8b"
api_key_env = "LOCAL_KEY"
context_window = 32768

[models.claude]
kind = "anthropic"
model = "claude-sonnet-4-5"
"""


def test_models_load_with_their_defaults_and_the_default_model_is_chosen(
    tmp_path: Path,
) -> None:
    config = load_config(_write(tmp_path / "c.toml", MODELS)).config

    name, local = config.model()
    assert name == "local"
    assert (local.kind, local.base_url, local.model, local.api_key_env) == (
        "openai",
        "http://127.0.0.1:11434/v1",
        "qwen3:8b",
        "LOCAL_KEY",
    )
    assert (local.context_window, local.timeout, local.max_retries) == (32768, 120.0, 2)
    assert config.model("claude")[1].base_url is None


def test_an_unknown_default_model_is_rejected_listing_the_known_ones(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.toml", MODELS.replace('"local"\n', '"locl"\n', 1))

    with pytest.raises(ConfigError) as info:
        load_config(path)

    assert str(info.value).endswith(
        "default_model 'locl' has no [models.locl] table; known models: claude, local"
    )


def test_asking_for_a_model_without_any_configured_says_how_to_add_one() -> None:
    config = load_config("/nonexistent/pegboard.toml").config

    with pytest.raises(ConfigError, match=r"no model is configured; add a \[models.<id>\] table"):
        config.model()
    with pytest.raises(ConfigError, match="unknown model 'x'; known models: none"):
        config.model("x")


def test_a_model_base_url_without_a_scheme_is_rejected(tmp_path: Path) -> None:
    text = '[models.m]\nkind = "openai"\nmodel = "q"\nbase_url = "127.0.0.1:11434/v1"\n'

    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path / "c.toml", text))

    assert str(info.value).endswith(
        "models.m.base_url: must start with http:// or https:// (e.g. http://127.0.0.1:11434/v1)"
    )  # the value itself is never echoed: a URL may carry credentials


def test_a_model_needs_a_kind_from_the_two_apis(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.toml", '[models.m]\nkind = "gemini"\nmodel = "g"\n')

    with pytest.raises(
        ConfigError, match=r"models\.m\.kind: Input should be 'openai' or 'anthropic'"
    ):
        load_config(path)


def _claude_desktop(tmp_path: Path, servers: dict[str, object]) -> Path:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def test_import_adds_new_servers_and_updates_changed_ones_keeping_pegboard_keys(
    tmp_path: Path,
) -> None:
    current = {"servers": {"time": {"command": "old", "name": "Clock", "enabled": False}}}
    source = _claude_desktop(
        tmp_path,
        {
            "time": {"command": "uvx", "args": ["mcp-server-time"]},
            "remote": {"url": "http://127.0.0.1:1/mcp", "headers": {"A": "b"}},
        },
    )

    plan = plan_import(source, current)

    assert plan.added == ["remote"]
    assert plan.changed == ["time"]
    assert plan.merged["servers"]["time"] == {
        "name": "Clock",
        "enabled": False,
        "command": "uvx",
        "args": ["mcp-server-time"],
    }
    assert current["servers"]["time"]["command"] == "old"


def test_import_of_identical_servers_changes_nothing(tmp_path: Path) -> None:
    source = _claude_desktop(tmp_path, {"time": {"command": "uvx", "args": ["mcp-server-time"]}})
    current = {"servers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}

    plan = plan_import(source, current)

    assert (plan.added, plan.changed, plan.unchanged, plan.has_changes) == (
        [],
        [],
        ["time"],
        False,
    )


def test_import_reads_vs_code_files_and_maps_disabled(tmp_path: Path) -> None:
    source = tmp_path / "mcp.json"
    source.write_text(
        json.dumps({"servers": {"fs": {"type": "stdio", "command": "x", "disabled": True}}}),
        encoding="utf-8",
    )

    plan = plan_import(source, {})

    assert plan.merged == {"servers": {"fs": {"type": "stdio", "command": "x", "enabled": False}}}


def test_the_import_diff_shows_the_added_table(tmp_path: Path) -> None:
    source = _claude_desktop(tmp_path, {"time": {"command": "uvx"}})
    plan = plan_import(source, {"context_window": 1000})

    diff = plan.diff(Path("c.toml"))

    assert diff.splitlines()[2:] == [
        "@@ -1 +1,4 @@",
        " context_window = 1000",
        "+",
        "+[servers.time]",
        '+command = "uvx"',
    ]


def test_import_rejects_a_file_without_servers(tmp_path: Path) -> None:
    source = tmp_path / "x.json"
    source.write_text("{}", encoding="utf-8")

    with pytest.raises(ConfigError, match="no MCP servers found; expected an 'mcpServers'"):
        plan_import(source, {})


def test_written_config_round_trips_and_keeps_a_backup(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.toml", "context_window = 1\n")

    write_config(path, {"servers": {"t": {"command": "uvx"}}})

    assert load_config(path).config.servers["t"].command == "uvx"
    assert (tmp_path / "c.toml.bak").read_text(encoding="utf-8") == "context_window = 1\n"


def test_readme_configuration_reference_matches_the_model() -> None:
    text = README.read_text(encoding="utf-8")
    begin, end = "<!-- config-reference:begin -->\n", "<!-- config-reference:end -->"
    assert begin in text, "README lacks the generated configuration reference"
    embedded = text.split(begin, 1)[1].split(end, 1)[0]

    assert embedded.strip() == render_reference().strip(), (
        "README configuration reference is stale; regenerate it with "
        "`python -m pegboard.config README.md`"
    )


def test_import_reads_vs_code_jsonc_with_comments_and_trailing_commas(tmp_path: Path) -> None:
    source = tmp_path / "settings.json"
    source.write_text(
        """{
  // editor settings
  "editor.fontSize": 13, /* block */
  "mcp": {
    "servers": {
      "fs": {"command": "npx", "args": ["-y", "pkg//not-a-comment", "a,]"],},
    },
  },
}""",
        encoding="utf-8",
    )

    plan = plan_import(source, {})

    assert plan.merged == {
        "servers": {"fs": {"command": "npx", "args": ["-y", "pkg//not-a-comment", "a,]"]}}
    }


def test_auth_rules_refuse_blank_names_and_a_half_configured_issuer() -> None:
    import pydantic
    import pytest

    from pegboard.config.model import PegboardConfig

    base = {"issuer": "https://idp", "audience": "https://gw/mcp"}
    for bad in (
        {"issuer": "https://idp"},
        {"audience": "https://gw/mcp"},
        base | {"issuer": "idp.example.com"},
        base | {"allow": [{"subjects": []}]},
        base | {"allow": [{"subjects": [" alice"]}]},
        base | {"allow": [{"subjects": ["group:"]}]},
        base | {"allow": [{"subjects": ["*"], "colour": "red"}]},
    ):
        with pytest.raises(pydantic.ValidationError):
            PegboardConfig.model_validate({"auth": bad})


def test_empty_list_and_table_defaults_are_new_for_each_config(tmp_path: Path) -> None:
    text = (
        '[profiles.p]\n[profiles.q]\n[servers.a]\ncommand = "uvx"\n[servers.b]\ncommand = "npx"\n'
    )
    config = load_config(_write(tmp_path / "c.toml", text)).config
    other = load_config(tmp_path / "absent.toml").config

    config.profiles["p"].mcp_servers.append("a")
    config.profiles["p"].knowledge_bases.append("notes")
    config.servers["a"].env["K"] = "v"
    config.limits.per_tool["x"] = 1
    config.web_fetch.allow_networks.append("127.0.0.1/32")
    config.auth.admins.append("alice")

    assert config.profiles["q"].mcp_servers == []
    assert config.profiles["q"].knowledge_bases == []
    assert config.servers["b"].env == {}
    assert other.limits.per_tool == {}
    assert other.web_fetch.allow_networks == []
    assert other.auth.admins == []
    assert load_config(tmp_path / "c.toml").config.servers["a"].env == {}

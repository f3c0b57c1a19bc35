"""What the CLI prints, at a fixed width: help, tables, and text shown verbatim."""

import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pegboard.cli.app import app
from tests.cli.conftest import Invoke, as_json, warm_cache, write
from tests.gateway.harness import PEGBOARD

SERVE_HELP_80 = """\
Usage: pegboard serve [OPTIONS]

  Serve all configured MCP servers as one MCP server.

  Speaks MCP over stdio (the default) or streamable HTTP (--http).

  tools/list is answered at once from the catalog cache; servers start in the
  background. Over --http, a non-loopback --host needs a bearer token
  ([gateway] token or PEGBOARD_TOKEN). Enabling or disabling a server, or
  editing the profile, in the config file takes effect at once (clients get
  tools/list_changed). Stops every child server on exit (EOF on stdin,
  SIGTERM, Ctrl-C).

Options:
  --http                   Serve streamable HTTP instead of stdio.
  --host HOST              Bind address for --http (default 127.0.0.1).
  --port PORT              Port for --http (default 8765; 0 = any free port).
  -p, --profile PROFILE    Profile to serve (default: default).
  --no-defer               Expose every tool inline; no meta-tools.
  --context-window TOKENS  Context window of the client's model; decides
                           deferral (default 200000).
  --log-level LEVEL        Log level on stderr: debug, info, warning.
                           [default: warning]
  --help                   Show this message and exit.
"""

TOOLS_HELP = """\
Usage: pegboard tools [OPTIONS] COMMAND [ARGS]...

  List, search, inspect and call tools.

Options:
  --help  Show this message and exit.

Commands:
  list     List the profile's tools.
  search   Search the profile's tools by what they do.
  inspect  Show one tool: its server, original name and signature.
  call     Call a tool once and print the result.
  trust    Accept a changed tool definition or server launch definition.
"""

ROOT_HELP = """\
Usage: pegboard [OPTIONS] COMMAND [ARGS]...

  A tool layer for LLM agents: many tools and MCP servers, a small context.

Options:
  -c, --config PATH  Config file (default: $PEGBOARD_CONFIG, then the user
                     config dir).
  --help             Show this message and exit.

Commands:
  serve      Serve all configured MCP servers as one MCP server.
  chat       Chat with a configured model over the profile's tools.
  tools      List, search, inspect and call tools.
  servers    Add, remove, check, refresh, enable, disable MCP servers.
  config     Show, locate and import configuration.
  bench      Benchmarks that anyone can rerun.
  kb         Knowledge bases: local files that kb_search finds by meaning.
  audit      Read the audit log of tool calls.
  approvals  List, approve and deny gated calls waiting for a person.
  ui         The admin web UI: servers, tools, approvals, audit.
"""


def help_at(columns: int, *args: str) -> str:
    # A real process: typer's CliRunner forces 80 columns whatever COLUMNS says.
    env = {"PATH": os.environ.get("PATH", ""), "COLUMNS": str(columns)}
    result = subprocess.run(
        [PEGBOARD, *args, "--help"], env=env, capture_output=True, text=True, check=True
    )
    return result.stdout


@pytest.mark.parametrize("columns", [80, 100])
def test_help_reads_as_plain_wrapped_text_with_named_values(columns: int) -> None:
    # Help wraps at 80 columns at most, so 100 columns print the same text.
    assert help_at(columns, "serve") == SERVE_HELP_80
    assert help_at(columns, "tools") == TOOLS_HELP
    assert help_at(columns) == ROOT_HELP


def test_help_names_arguments_and_shows_no_type_tags() -> None:
    text = help_at(80, "tools", "inspect")

    assert text.startswith("Usage: pegboard tools inspect [OPTIONS] NAME\n")
    assert "  NAME  Wire name, e.g. mcp__github__create_issue.\n" in text
    for tag in ("<bool>", "<str>", "<int>", "{name}"):
        assert tag not in text


LONG = (
    "Set a key of the [gateway] table in the config file, such as the port, the host and "
    "the bearer token that clients must send."
)
TOOLS = [
    {"name": "add", "description": "Add two integers.", "inputSchema": {"type": "object"}},
    {"name": "set-gateway", "description": LONG + "\nMore.", "inputSchema": {"type": "object"}},
]


@pytest.fixture
def warmed(invoke: Invoke, config_path: Path) -> Invoke:
    write(config_path, {"servers": {"box": {"command": "/nonexistent/x"}}})
    warm_cache(config_path, "box", TOOLS)
    return invoke


def lines_at(columns: str | None, *args: str) -> list[str]:
    env = {"COLUMNS": columns} if columns else {}
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == 0, result.stderr
    return [line.rstrip() for line in result.stdout.splitlines()]


def test_tools_list_at_100_columns_gives_each_tool_one_cut_line(warmed: Invoke) -> None:
    assert lines_at("100", "tools", "list") == [
        "2 tools",
        "name                    namespace   defer   description",
        "─" * 100,
        "mcp__box__add           mcp:box     auto    Add two integers.",
        "mcp__box__set-gateway   mcp:box     auto    Set a key of the [gateway] table in the "
        "config file, su…",
    ]


def test_tools_list_wide_wraps_whole_descriptions_and_never_cuts_names(warmed: Invoke) -> None:
    lines = lines_at("80", "tools", "list", "--wide")

    assert lines[3] == "mcp__box__add           mcp:box     auto    Add two integers."
    assert (
        lines[4]
        == "mcp__box__set-gateway   mcp:box     auto    Set a key of the [gateway] table in"
    )
    assert " ".join(line[44:].strip() for line in lines[4:]) == LONG


def test_piped_tables_are_not_cut_at_all(warmed: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)

    lines = lines_at(None, "tools", "list")

    assert lines[4] == f"mcp__box__set-gateway   mcp:box     auto    {LONG}"


def test_inspect_shows_the_server_and_the_original_name(warmed: Invoke) -> None:
    text = warmed("tools", "inspect", "mcp__box__set-gateway")
    data = as_json(warmed("tools", "inspect", "mcp__box__set-gateway", "--json"))

    assert text.stdout.splitlines()[0] == "// server: box, original name: set-gateway"
    assert (data["server_id"], data["original_name"]) == ("box", "set-gateway")


def test_a_legacy_wire_name_still_finds_the_renamed_tool(warmed: Invoke) -> None:
    from pegboard.core.names import legacy_mcp_tool_name

    old = legacy_mcp_tool_name("box", "set-gateway")
    data = as_json(warmed("tools", "inspect", old, "--json"))

    assert old.startswith("mcp__box__setGateway__")
    assert data["name"] == "mcp__box__set-gateway"


def test_errors_print_square_brackets_verbatim(invoke: Invoke, config_path: Path) -> None:
    config_path.write_text('[servers.time]\ncommand = "uvx"\n', encoding="utf-8")

    result = invoke("servers", "add", "time", "--", "x")

    assert result.stderr.endswith("or remove [servers.time] there\n")


EVERYTHING_LIKE = [
    {
        "name": "get-resource-links-and-annotated-message",
        "description": "Returns up to ten resource links that reference different types of "
        "resources",
        "inputSchema": {"type": "object"},
    },
    {"name": "echo", "description": "Echoes back the input string", "inputSchema": {}},
]


def test_tools_list_at_80_columns_drops_defer_and_namespace_before_the_description(
    invoke: Invoke, config_path: Path
) -> None:
    write(config_path, {"servers": {"everything": {"command": "/nonexistent/x"}}})
    warm_cache(config_path, "everything", EVERYTHING_LIKE)

    lines = lines_at("80", "tools", "list")

    long_name = "mcp__everything__get-resource-links-and-annotated-message"
    assert lines[1] == f"{'name':<{len(long_name)}}   description"
    assert lines[3] == f"{'mcp__everything__echo':<{len(long_name)}}   Echoes back the inp…"
    assert lines[4] == f"{long_name}   Returns up to ten r…"
    assert max(len(line) for line in lines) <= 80


def test_servers_list_at_80_columns_prints_whole_booleans_and_cuts_only_the_command(
    invoke: Invoke, config_path: Path
) -> None:
    command = "/work/refservers/npm/node_modules/.bin/mcp-server-everything"
    write(
        config_path,
        {
            "servers": {
                "everything": {"command": command},
                "time": {"command": "/usr/bin/mcp-server-time", "enabled": False},
            }
        },
    )

    lines = lines_at("80", "servers", "list")
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("id ")) - 1 :]

    assert lines[1].split() == ["id", "name", "transport", "command", "/", "url", "enabled"]
    assert lines[3].endswith("   True")
    assert lines[4].endswith("   False")
    assert lines[3].startswith("everything   everything   stdio       /work/refservers/npm/")
    assert "…" in lines[3]
    assert max(len(line) for line in lines) <= 80


def test_piped_tables_carry_no_padding_after_the_last_cell(
    warmed: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)

    out = CliRunner().invoke(app, ["tools", "list"]).stdout

    assert out.splitlines()[3] == "mcp__box__add           mcp:box     auto    Add two integers."
    assert all(line == line.rstrip() for line in out.splitlines())


# Cells a table may hold: ASCII, accented, double-width (CJK, emoji) and a middle dot, so that
# cuts and padding land on wide characters as well as narrow ones.
PIECES = ["a", "b", " ", "é", "漢", "字", "😀", "-", "xxxxx", "名前", "·"]


@pytest.mark.parametrize("seed", range(3))
def test_unstyled_tables_are_laid_out_as_rich_lays_them_out(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # plain_table (the piped or COLUMNS path without rich's console) against rich's own
    # rendering of the same table, byte for byte, at widths that cut, drop and overflow.
    import io
    import random

    from rich.console import Console

    from pegboard.cli.render import PIPE_WIDTH, Column, plain_table, print_table

    rng = random.Random(seed)
    tools = [Column("name", key=True), Column("namespace", key=True, optional=True)]
    tools += [Column("defer", key=True, optional=True), Column("description")]
    servers = [Column("id", key=True), Column("state", key=True), Column("command")]
    compared = 0
    for _ in range(400):
        columns = rng.choice([tools, servers])
        rows = [
            ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 25))) for _ in columns]
            for _ in range(rng.randint(1, 6))
        ]
        title = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30)))
        for width in ["", "7", "20", "40", "80", "133"]:
            monkeypatch.setenv("COLUMNS", width)
            size = int(width) if width else PIPE_WIDTH
            found = plain_table(title, columns, rows, size, int(width) if width else 80)
            if found is None:  # a title rich would wrap
                continue
            out = io.StringIO()
            print_table(title, columns, rows, out=Console(file=out, highlight=False, markup=False))
            assert found == out.getvalue()
            compared += 1
    assert compared > 1000


def test_rich_lays_out_what_the_plain_path_cannot() -> None:
    from pegboard.cli.render import Column, plain_table

    columns = [Column("name", key=True), Column("description")]
    assert plain_table("t", columns, [], 80, 80) is None  # no rows
    assert plain_table("t", columns, [["a\tb", "c"]], 80, 80) is None  # a tab rich expands
    assert plain_table("t", columns, [["a", "b\u200bc"]], 80, 80) is None  # zero-width
    assert plain_table("x" * 81, columns, [["a", "b"]], 80, 80) is None  # a wrapped title
    assert plain_table("t", columns, [["a", "b"]], 80, 80) == "t\nname   description\n" + (
        "─" * 18 + "\na      b          \n"
    )


def test_a_command_group_makes_only_the_subcommand_named_and_still_lists_all_in_order() -> None:
    # `tools list` makes one click command of the tools group's five (making one evaluates
    # its function's annotations); help, completion and a typo's suggestion see every one.
    import importlib

    import typer
    from typer import _click as click

    from pegboard.cli.app import COMMANDS, lazy_command

    groups = 0
    for name, (module, attribute) in COMMANDS.items():
        target = getattr(importlib.import_module(module), attribute)
        if not isinstance(target, typer.Typer):
            continue
        groups += 1
        eager = typer.main.get_group(target)
        lazy = lazy_command(name)
        ctx = click.Context(lazy)
        order = eager.list_commands(click.Context(eager))
        named = lazy.get_command(ctx, order[-1])
        assert named is not None, name
        assert named.name == order[-1], name
        assert list(lazy.commands) == [order[-1]], name
        assert lazy.list_commands(ctx) == order, name
        assert [lazy.commands[n].help for n in order] == [eager.commands[n].help for n in order]
    assert groups == 7


def test_a_mistyped_subcommand_is_still_answered_with_the_close_names() -> None:
    done = subprocess.run([PEGBOARD, "tools", "lst"], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == "Error: No such command 'lst'. Did you mean 'list'?"

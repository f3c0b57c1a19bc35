import os
import sys
from pathlib import Path

from tests.cli.conftest import Invoke, as_json, sdk_server, warm_cache, write
from tests.cli.terminal import CONTROLLING_TTY, PseudoTerminal

TOOLS = [
    {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
    {
        "name": "send_email",
        "description": "Send an email message to a recipient.",
        "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}}},
    },
]


def _warm(config_path: Path, **profiles: object) -> None:
    # callers request the invoke fixture first, which points PEGBOARD_DATA_DIR at tmp_path
    write(config_path, {"servers": {"box": {"command": "/nonexistent/x"}}, "profiles": profiles})
    warm_cache(config_path, "box", TOOLS)


def test_tools_list_shows_the_cached_tools_of_the_profile(
    invoke: Invoke, config_path: Path
) -> None:
    _warm(config_path, quiet={"mcp_mode": "disabled"})

    listed = as_json(invoke("tools", "list", "--json"))
    quiet = as_json(invoke("tools", "list", "--profile", "quiet", "--json"))

    assert [(t["name"], t["label"], t["description"]) for t in listed] == [
        ("mcp__box__add", "mcp:box", "Add two integers."),
        ("mcp__box__send_email", "mcp:box", "Send an email message to a recipient."),
    ]
    assert quiet == []


def test_tools_search_ranks_the_matching_tool_first(invoke: Invoke, config_path: Path) -> None:
    _warm(config_path)

    hits = as_json(invoke("tools", "search", "email someone", "--json"))

    assert hits[0]["name"] == "mcp__box__send_email"


def test_tools_inspect_prints_the_signature_stub(invoke: Invoke, config_path: Path) -> None:
    _warm(config_path)

    result = invoke("tools", "inspect", "mcp__box__add")

    assert result.exit_code == 0
    assert " * @param {integer} params.a (required)" in result.stdout.splitlines()


def test_an_unknown_tool_exits_3_with_suggestions(invoke: Invoke, config_path: Path) -> None:
    _warm(config_path)

    result = invoke("tools", "inspect", "add")

    assert result.exit_code == 3
    # The one did-you-mean of every route (pegboard.core.resolve.suggest_names).
    assert result.stderr == "error: Tool not found: add. Did you mean: mcp__box__add?\n"


def test_tools_call_runs_a_real_tool_and_a_tool_error_exits_1(
    invoke: Invoke, config_path: Path
) -> None:
    write(config_path, {"servers": {"toolbox": sdk_server()}})
    invoke("servers", "refresh", "toolbox")

    ok = invoke("tools", "call", "mcp__toolbox__add", '{"a": 40, "b": 2}', "--json")
    failed = invoke("tools", "call", "mcp__toolbox__fail", '{"reason": "nope"}')

    assert ok.exit_code == 0
    assert as_json(ok)["structuredContent"] == {"result": 42}
    assert failed.exit_code == 1
    assert "nope" in failed.stdout


def test_tools_call_rejects_arguments_that_are_not_a_json_object(
    invoke: Invoke, config_path: Path
) -> None:
    _warm(config_path)

    result = invoke("tools", "call", "mcp__box__add", "[1, 2]")

    assert result.exit_code == 2
    assert "arguments must be a JSON object" in result.stderr


def _gated_toolbox(invoke: Invoke, config_path: Path) -> None:
    server = sdk_server() | {"force_prompt_tools": ["add"]}
    write(config_path, {"servers": {"toolbox": server}})
    invoke("servers", "refresh", "toolbox")


def test_tools_call_of_a_gated_tool_without_a_terminal_is_denied_naming_yes(
    invoke: Invoke, config_path: Path
) -> None:
    _gated_toolbox(invoke, config_path)

    denied = invoke("tools", "call", "mcp__toolbox__add", '{"a": 40, "b": 2}')
    approved = invoke("tools", "call", "mcp__toolbox__add", '{"a": 40, "b": 2}', "--yes")

    assert denied.exit_code == 1
    assert denied.stdout.strip() == (
        "Tool mcp__toolbox__add needs approval, but stdin is not a terminal, so nobody can be "
        "asked; it was not run. Rerun with --yes to approve gated tools without asking."
    )
    assert approved.exit_code == 0
    assert approved.stdout.strip() == "42"


def _answer_on_a_terminal(config_path: Path, tmp_path: Path, keys: str) -> PseudoTerminal:
    """Run ``tools call`` of the gated add on a pseudo-terminal and type ``keys`` at the
    approval prompt; the terminal is returned closed, with all it showed."""
    env = os.environ | {
        "PEGBOARD_CONFIG": str(config_path),
        "PEGBOARD_DATA_DIR": str(tmp_path / "data"),
    }
    code = f"{CONTROLLING_TTY}; from pegboard.cli import main; main()"
    args = ["tools", "call", "mcp__toolbox__add", '{"a": 40, "b": 2}']
    with PseudoTerminal([sys.executable, "-c", code, *args], env=env) as term:
        term.expect("(d): ")
        term.send(keys)
        term.read_to_end()
    return term


def test_tools_call_asks_on_a_real_terminal_and_runs_once_allowed(
    invoke: Invoke, config_path: Path, tmp_path: Path
) -> None:
    _gated_toolbox(invoke, config_path)

    term = _answer_on_a_terminal(config_path, tmp_path, "o\n")

    assert "│ tool       mcp__toolbox__add" in term.seen
    assert term.seen.splitlines()[-1].strip() == "42"
    assert term.returncode == 0


def test_ctrl_c_at_the_approval_prompt_ends_the_command_without_running_the_tool(
    invoke: Invoke, config_path: Path, tmp_path: Path
) -> None:
    _gated_toolbox(invoke, config_path)

    term = _answer_on_a_terminal(config_path, tmp_path, "\x03")

    assert term.seen.rstrip().endswith("(d): ^C")  # nothing after the interrupt: the tool never ran
    assert term.returncode == 130

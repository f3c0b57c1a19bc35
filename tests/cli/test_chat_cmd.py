import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from tests.cli.conftest import Invoke, sdk_server, warm_cache, write
from tests.cli.terminal import CONTROLLING_TTY, WAIT, PseudoTerminal
from tests.model_server import Call, Request, ScriptedModel, Turn

GATED = "mcp__toolbox__add"
FOUND = "mcp__toolbox__gen_2"  # "create a calendar event"
BROKEN = '{"a": 40, "b": "two"}'  # parses, does not validate: b must be an integer


def _config(
    config_path: Path, model: dict[str, Any], *, tools: int = 12, window: int | None = 4000
) -> None:
    server = sdk_server() | {"force_prompt_tools": ["add"]}
    server["args"] = [*server["args"], "--tools", str(tools)]
    entry = {"model": "scripted-model", "max_retries": 0, "timeout": 30.0} | model
    if window is not None:
        entry["context_window"] = window
    write(config_path, {"servers": {"toolbox": server}, "models": {"local": entry}})


def _openai(model_server: ScriptedModel) -> dict[str, Any]:
    return {"kind": "openai", "base_url": model_server.url}


def _script(model_server: ScriptedModel) -> None:
    """Search, inspect, a broken call of the gated tool (repaired), then the answer."""
    model_server.add(
        Turn(tool_calls=[Call("tool_search", {"query": "calendar event"}, id="c1")]),
        Turn(tool_calls=[Call("tool_inspect", {"name": FOUND}, id="c2")]),
        Turn(tool_calls=[Call(GATED, BROKEN, id="c3")]),
        Turn(structured={"a": 40, "b": 2}, match=lambda r: r.structured),
        Turn(text="40 plus 2 is 42."),
    )


def _tool_message(request: Request, call_id: str) -> str:
    """The content of the tool result for ``call_id`` sent in ``request``."""
    for message in request.messages:
        if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
            return str(message["content"])
    raise AssertionError(f"no tool result for {call_id} in {request.messages}")


def _assert_the_scripted_run(model_server: ScriptedModel) -> None:
    requests = model_server.requests
    assert model_server.problems == []
    assert len(requests) == 5
    first = requests[0]
    assert first.stream
    assert {"tool_search", "tool_inspect", "tool_invoke", GATED} <= set(first.tool_names)
    assert FOUND not in first.tool_names  # deferred: the 4000-token window is small
    assert FOUND in _tool_message(requests[1], "c1")
    assert f"function {FOUND}(params)" in _tool_message(requests[2], "c2")
    repair = requests[3]
    assert repair.structured
    assert not repair.stream
    assert "Validation error" in repair.messages[-1]["content"]
    assert BROKEN in repair.messages[-1]["content"]
    assert _tool_message(requests[4], "c3") == "42"


def test_chat_once_searches_inspects_repairs_a_gated_call_and_answers(
    invoke: Invoke, config_path: Path, model_server: ScriptedModel
) -> None:
    _config(config_path, _openai(model_server))
    _script(model_server)

    result = invoke("chat", "--once", "What is 40 plus 2?", "--yes", "--json")

    assert result.exit_code == 0, result.output
    transcript = json.loads(result.stdout)
    assert transcript["answer"] == "40 plus 2 is 42."
    assert transcript["rounds"] == 4
    assert transcript["capped"] is False
    assert transcript["repair"] == {
        "attempts": 1,
        "free_fixes": 0,
        "model_calls": 1,
        "model_fixes": 1,
        "capped": 0,
        "text_calls": 0,
    }
    messages = transcript["messages"]
    assert [m["role"] for m in messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert messages[0]["content"] == "What is 40 plus 2?"
    assert messages[5]["tool_calls"] == [{"id": "c3", "name": GATED, "arguments": BROKEN}]
    assert messages[6] == {
        "role": "tool",
        "content": "42",
        "tool_call_id": "c3",
        "is_error": False,
    }
    assert messages[7] == {"role": "assistant", "content": "40 plus 2 is 42."}
    _assert_the_scripted_run(model_server)


def test_chat_once_prints_only_the_answer_on_stdout(
    invoke: Invoke, config_path: Path, model_server: ScriptedModel
) -> None:
    _config(config_path, _openai(model_server))
    _script(model_server)

    result = invoke("chat", "--once", "What is 40 plus 2?", "--yes")

    assert result.exit_code == 0, result.output
    assert result.stdout == "40 plus 2 is 42.\n"
    # The tool panels go to stderr; the repaired call's shows what ran, marked.
    assert f"{GATED} · ok · repaired" in result.stderr
    assert 'args   {"a": 40, "b": 2}' in result.stderr
    assert '"two"' not in result.stderr


def test_chat_once_asks_for_approval_on_a_terminal_once_with_the_repaired_arguments(
    invoke: Invoke, config_path: Path, model_server: ScriptedModel, tmp_path: Path
) -> None:
    _config(config_path, _openai(model_server))
    _script(model_server)
    env = os.environ | {
        "PEGBOARD_CONFIG": str(config_path),
        "PEGBOARD_DATA_DIR": str(tmp_path / "data"),
    }
    code = f"{CONTROLLING_TTY}; from pegboard.cli import main; main()"
    argv = [sys.executable, "-c", code, "chat", "--once", "What is 40 plus 2?"]

    with PseudoTerminal(argv, env=env) as term:
        term.expect("(d): ")
        term.send("o\n")
        after = term.read_to_end()

    prompt = term.seen[: term.seen.index("(d): ")]
    assert prompt.count("Approve this tool call?") == 1
    assert '"b": 2' in prompt
    assert '"two"' not in prompt.split("Approve this tool call?")[1]
    assert "Approve this tool call?" not in after
    assert after.splitlines()[-1].strip() == "40 plus 2 is 42."
    assert term.returncode == 0
    _assert_the_scripted_run(model_server)


def test_chat_once_without_a_terminal_or_yes_tells_the_model_the_call_was_denied(
    invoke: Invoke, config_path: Path, model_server: ScriptedModel
) -> None:
    _config(config_path, _openai(model_server))
    model_server.add(
        Turn(tool_calls=[Call(GATED, {"a": 1, "b": 2}, id="c1")]),
        Turn(text="I could not add them."),
    )

    result = invoke("chat", "--once", "Add 1 and 2")

    assert result.exit_code == 0, result.output
    assert result.stdout == "I could not add them.\n"
    assert _tool_message(model_server.requests[1], "c1") == (
        f"Error: Tool {GATED} needs approval, but stdin is not a terminal, so nobody can be "
        "asked; it was not run. Rerun with --yes to approve gated tools without asking."
    )


def test_the_model_context_window_decides_deferral(
    invoke: Invoke, config_path: Path, model_server: ScriptedModel
) -> None:
    _config(config_path, _openai(model_server), window=1_000_000)
    model_server.add(Turn(text="hello"))

    result = invoke("chat", "--once", "hi")

    assert result.exit_code == 0, result.output
    names = model_server.requests[0].tool_names
    assert FOUND in names
    assert "tool_search" not in names


def test_chat_once_speaks_anthropic_through_the_same_loop(
    invoke: Invoke, config_path: Path, model_server: ScriptedModel
) -> None:
    _config(config_path, {"kind": "anthropic", "base_url": model_server.url.removesuffix("/v1")})
    model_server.add(
        Turn(tool_calls=[Call(GATED, {"a": 40, "b": 2}, id="toolu_1")]),
        Turn(text="It is 42."),
    )

    result = invoke("chat", "--once", "What is 40 plus 2?", "--yes", "--json")

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["answer"] == "It is 42."
    requests = model_server.requests
    assert [r.api for r in requests] == ["anthropic", "anthropic"]
    assert GATED in requests[0].tool_names
    result_block = requests[1].messages[-1]["content"][0]
    assert result_block["type"] == "tool_result"
    assert result_block["tool_use_id"] == "toolu_1"
    assert result_block["content"][0]["text"] == "42"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_model_endpoint_is_one_line_naming_it_and_exit_1(
    invoke: Invoke, config_path: Path
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    _config(config_path, {"kind": "openai", "base_url": url}, tools=0)

    result = invoke("chat", "--once", "hi")

    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: Model endpoint {url} is unreachable")


def test_no_model_configured_shows_the_table_to_add_and_exits_2(
    invoke: Invoke, config_path: Path
) -> None:
    write(config_path, {"servers": {}})

    result = invoke("chat", "--once", "hi")

    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"no model is configured; add a table to {config_path}" in lines[0]
    assert '[models.local] kind = "openai", base_url = "http://127.0.0.1:11434/v1"' in lines[0]


def test_the_interactive_session_has_commands_and_ctrl_c_cancels_only_the_turn(
    invoke: Invoke, config_path: Path, model_server: ScriptedModel, tmp_path: Path
) -> None:
    _config(config_path, _openai(model_server), tools=0)
    model_server.add(Turn(text="Hello there."), Turn(hang=True), Turn(text="Still here."))
    env = os.environ | {
        "PEGBOARD_CONFIG": str(config_path),
        "PEGBOARD_DATA_DIR": str(tmp_path / "data"),
    }
    code = f"{CONTROLLING_TTY}; from pegboard.cli import main; main()"

    with PseudoTerminal([sys.executable, "-c", code, "chat"], env=env) as term:
        term.expect("you> ")
        term.send("/tools\n")
        term.expect("tools shown, 0 behind tool_search")
        term.send("/status\n")
        term.expect("repair   attempts 0")
        term.send("hi\n")
        term.expect("Hello there.")
        term.expect("you> ", times=4)
        term.send("wait for it\n")
        deadline = time.monotonic() + WAIT
        while len(model_server.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)  # the turn is waiting on the model that never answers
        term.send("\x03")
        term.expect("(turn cancelled)")
        term.send("again\n")
        term.expect("Still here.")
        term.send("/exit\n")
        term.read_to_end()

    assert term.returncode == 0
    assert f"{GATED}  Add two integers." in term.seen, term.seen
    last = model_server.requests[2].messages
    assert [(m["role"], m["content"]) for m in last[1:]] == [
        ("user", "hi"),
        ("assistant", "Hello there."),
        ("user", "again"),
    ]


def test_a_warning_logged_while_the_prompt_waits_is_shown_on_its_own_line_and_help_lists_commands(
    invoke: Invoke, config_path: Path, model_server: ScriptedModel, tmp_path: Path
) -> None:
    # `broken` has cached tools, so the first prompt does not wait for it; its background
    # refresh fails (no such command) while the prompt is shown.
    broken = {"command": str(tmp_path / "no-such-server")}
    entry = {"kind": "openai", "base_url": model_server.url, "model": "m", "max_retries": 0}
    write(config_path, {"servers": {"broken": broken}, "models": {"local": entry}})
    warm_cache(config_path, "broken", [{"name": "read", "inputSchema": {"type": "object"}}])
    env = os.environ | {
        "PEGBOARD_CONFIG": str(config_path),
        "PEGBOARD_DATA_DIR": str(tmp_path / "data"),
    }
    code = f"{CONTROLLING_TTY}; from pegboard.cli import main; main()"

    with PseudoTerminal([sys.executable, "-c", code, "chat"], env=env) as term:
        term.expect("you> ")
        deadline = time.monotonic() + WAIT
        while invoke("servers", "status", "--json").stdout.count('"failed"') == 0:
            assert time.monotonic() < deadline, "the broken server never failed"
            time.sleep(0.05)
        term.send("/help\n")
        term.expect("you> ", times=2)
        term.send("/exit\n")
        term.read_to_end()

    lines = term.seen.splitlines()
    failed = [line for line in lines if "refresh failed" in line]
    assert len(failed) == 1, term.seen
    assert failed[0].startswith("pegboard: MCP server broken: refresh failed: ")
    assert "/help    this list" in lines
    assert "/exit    leave (also /quit, Ctrl-D)" in lines
    assert term.returncode == 0


TEXT_CALL = (
    "I will add them.\n"
    f'<tool_call>{{"name": "{GATED}", "arguments": {{"a": 40, "b": 2}}}}</tool_call>'
)


def test_chat_once_runs_a_tool_call_the_model_wrote_as_text(
    invoke: Invoke, config_path: Path, model_server: ScriptedModel
) -> None:
    _config(config_path, _openai(model_server))
    model_server.add(Turn(text=TEXT_CALL), Turn(text="It is 42."))

    result = invoke("chat", "--once", "What is 40 plus 2?", "--yes", "--json")

    assert result.exit_code == 0, result.output
    transcript = json.loads(result.stdout)
    assert transcript["answer"] == "It is 42."
    assert transcript["repair"]["text_calls"] == 1
    call, answer = transcript["messages"][1], transcript["messages"][2]
    assert call["content"] == "I will add them."
    assert [(c["name"], json.loads(c["arguments"])) for c in call["tool_calls"]] == [
        (GATED, {"a": 40, "b": 2})
    ]
    assert (answer["role"], answer["content"]) == ("tool", "42")
    assert f"{GATED} · ok · from text" in result.stderr  # the panel


def test_text_tool_calls_false_in_the_models_table_keeps_such_text_the_answer(
    invoke: Invoke, config_path: Path, model_server: ScriptedModel
) -> None:
    _config(config_path, _openai(model_server) | {"text_tool_calls": False})
    model_server.add(Turn(text=TEXT_CALL))

    result = invoke("chat", "--once", "What is 40 plus 2?", "--yes")

    assert result.exit_code == 0, result.output
    assert result.stdout == TEXT_CALL + "\n"
    assert len(model_server.requests) == 1

"""Commands a new user runs against real servers print their answer and nothing else: no
warning telling them to run the command they ran, no refresh "failure" that was only the
command ending, no warning about settings they never made."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.gateway.harness import REFSERVERS, require_installed, run_cli, write_config

pytestmark = pytest.mark.anyio

EVERYTHING = REFSERVERS / "npm" / "node_modules" / ".bin" / "mcp-server-everything"
TIME = REFSERVERS / "py" / "bin" / "mcp-server-time"
require_installed([EVERYTHING, TIME])


async def test_refresh_call_list_and_status_print_nothing_on_stderr(tmp_path: Path) -> None:
    # server-everything sends tools/list_changed right after initialize, so every command
    # that connects ends while the refresh it triggers still runs; `time` stays cold.
    write_config(
        tmp_path,
        {
            "servers": {"everything": {"command": str(EVERYTHING)}, "time": {"command": str(TIME)}},
            "meta": {"tool_exec": True},  # and deferral left at its default
        },
    )

    code, out, err = await run_cli(tmp_path, "servers", "refresh", "everything")
    assert (code, err) == (0, "")
    assert re.fullmatch(r"everything: 13 tools \(\d+\.\d+ s\)\n", out)

    for _ in range(3):
        code, out, err = await run_cli(
            tmp_path, "tools", "call", "mcp__everything__echo", '{"message": "hi"}'
        )
        assert (code, out, err) == (0, "Echo: hi\n", "")

    code, out, err = await run_cli(tmp_path, "tools", "list")
    assert (code, err) == (0, "")
    assert out.startswith("13 tools\n")

    code, out, err = await run_cli(tmp_path, "servers", "status")
    assert (code, err) == (0, "")
    assert re.search(r"^time +cold +0 +never", out, re.MULTILINE)

"""Start-up cost: commands that do not talk MCP never import the MCP SDK."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("mcp", "mcp_types")

PROBE = """
import json, sys
sys.argv = ["pegboard", *{args!r}]
from pegboard.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps([m for m in {heavy!r} if m in sys.modules]), file=sys.stderr)
"""


def _loaded_after(*args: str) -> list[str]:
    code = PROBE.format(args=list(args), heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize(
    "args", [["--help"], ["tools", "--help"], ["serve", "--help"], ["chat", "--help"]]
)
def test_help_does_not_import_the_mcp_sdk(args: list[str]) -> None:
    assert _loaded_after(*args) == []


def test_import_pegboard_loads_neither_the_sdk_nor_the_catalog() -> None:
    code = "import sys, pegboard; print([m for m in sys.modules if m.startswith(PREFIXES)])"
    code = code.replace("PREFIXES", repr(("mcp", "pegboard.")))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_early_answers_of_serve_need_only_the_standard_library() -> None:
    code = (
        "import sys; from pegboard.gateway import early; "
        "print(sorted(m for m in sys.modules if m.startswith(('mcp', 'pydantic', 'anyio'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"

"""Every snippet of the README runs (Python) or loads (TOML) as written.

Python blocks run in a subprocess that can only reach loopback, with an empty default config
and the scripted model server behind ``OPENAI_BASE_URL``; the framework examples have their
own test (tests/integrations/test_readme.py) and the model-written ``tool_exec`` code is
sandbox code, not a program. TOML blocks that are pegboard config validate as one.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pegboard.config.load import validate_config
from tests.model_server import Call, ScriptedModel, Turn

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUARD = "from tests.integrations.loopback import only_loopback\nonly_loopback()\n"
FRAMEWORKS = "### Inside an agent framework"
SANDBOX = "## `tool_exec`"


def _sections() -> list[tuple[str, str]]:
    """(heading, body) of every section, headings of any level."""
    parts = re.split(r"^(#{2,4} .*)$", README.read_text(encoding="utf-8"), flags=re.M)
    return list(zip(parts[1::2], parts[2::2], strict=True))


def _blocks(language: str) -> list[tuple[str, str]]:
    return [
        (heading, block)
        for heading, body in _sections()
        for block in re.findall(rf"```{language}\n(.*?)```", body, flags=re.S)
    ]


def python_snippets() -> dict[str, str]:
    """The runnable Python blocks, keyed by their section heading (and index)."""
    found: dict[str, str] = {}
    for heading, block in _blocks("python"):
        if heading.startswith((FRAMEWORKS, SANDBOX)) or "pegboard.integrations." in block:
            continue
        found[f"{heading} #{sum(k.startswith(heading) for k in found)}"] = block
    return found


def test_the_readme_snippets_are_found() -> None:
    assert sorted(python_snippets()) == [
        "### A Python agent #0",
        "### The library in a few lines #0",
        "### The library in a few lines #1",
    ]


def _env(tmp_path: Path, model: ScriptedModel) -> dict[str, str]:
    (tmp_path / "config.toml").write_text("")
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "TMPDIR")}
    return env | {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "OPENAI_BASE_URL": model.url,
        "OPENAI_API_KEY": "test-key",
        "PEGBOARD_CONFIG": str(tmp_path / "config.toml"),
        "PEGBOARD_DATA_DIR": str(tmp_path / "data"),
        "PEGBOARD_CACHE_DIR": str(tmp_path / "cache"),
    }


@pytest.mark.parametrize("name", sorted(python_snippets()))
def test_a_python_snippet_runs_as_written(
    name: str, tmp_path: Path, model_server: ScriptedModel
) -> None:
    model_server.add(
        Turn(tool_calls=[Call("add", {"a": 2, "b": 3}, id="c1")]), Turn(text="2 + 3 = 5.")
    )

    done = subprocess.run(
        [sys.executable, "-c", GUARD + python_snippets()[name]],
        env=_env(tmp_path, model_server),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    if name.startswith("### The library in a few lines #0"):
        assert done.stdout == "2 + 3 = 5.\n"
        tool_message = model_server.requests[1].messages[-1]
        assert (tool_message["role"], tool_message["content"]) == ("tool", "5")
    elif name.startswith("### A Python agent"):
        # an empty config: no tools, so the direct call is answered "not found"
        assert done.stdout.splitlines()[-1].startswith("Tool not found: mcp__time__")


def test_every_toml_snippet_parses_and_each_config_one_validates() -> None:
    blocks = [block for _, block in _blocks("toml")]
    assert len(blocks) >= 5
    for block in blocks:
        data = tomllib.loads(block)
        if "project" in data:  # a package's pyproject.toml entry point, not pegboard config
            continue
        validate_config(data, source=README)

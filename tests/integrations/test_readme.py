"""The README's framework examples run as written, against the scripted model server (via
``OPENAI_BASE_URL``), with an empty default config, in a process that can only reach
loopback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.model_server import ScriptedModel, Turn

README = Path(__file__).resolve().parents[2] / "README.md"

GUARD = "from tests.integrations.loopback import only_loopback\nonly_loopback()\n"
ROOT = README.parent


def examples() -> dict[str, str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("### Inside an agent framework", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return {
        module: block
        for block in blocks
        for module in ("pydantic_ai", "openai_agents", "langchain")
        if f"pegboard.integrations.{module} import" in block
    }


def test_the_readme_has_one_example_per_framework() -> None:
    assert sorted(examples()) == ["langchain", "openai_agents", "pydantic_ai"]


@pytest.mark.parametrize("module", ["pydantic_ai", "openai_agents", "langchain"])
def test_a_readme_example_runs(module: str, tmp_path: Path, model_server: ScriptedModel) -> None:
    model_server.add(Turn(text="It is sunny in Oslo."))
    (tmp_path / "config.toml").write_text("")
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env |= {
        "OPENAI_BASE_URL": model_server.url,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "PEGBOARD_CONFIG": str(tmp_path / "config.toml"),
        "PEGBOARD_DATA_DIR": str(tmp_path / "data"),
        "PEGBOARD_CACHE_DIR": str(tmp_path / "cache"),
    }
    code = GUARD + examples()[module]

    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "It is sunny in Oslo.\n"
    assert model_server.problems == []
    assert len(model_server.requests) == 1

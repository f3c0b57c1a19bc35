"""Without the reference servers, pytest's summary says how to enable the real-server tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_reference_server_skips_naming_the_install_script(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "from pathlib import Path\n"
        "from tests.gateway.harness import require_installed\n"
        f"require_installed([Path({str(tmp_path / 'mcp-server-nowhere')!r})])\n"
        "def test_never_runs() -> None:\n"
        "    raise AssertionError\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(ROOT)

    # the project's own settings (pyproject.toml: -ra prints every skip reason)
    settings = ["--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml")]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *settings, str(probe)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 5, done.stdout  # nothing ran: the module was skipped
    assert (
        "real-server tests: mcp-server-nowhere not installed; enable them with "
        "`scripts/install_refservers.sh` (python3 and npm, into .refservers/)"
    ) in done.stdout

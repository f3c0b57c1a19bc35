"""Attack: make the audit log unwritable (a full disk, a directory where the file should be),
so calls run with no record.

``[audit] on_failure = "warn"`` (the default: an audit failure must not stop the user's work)
runs the call and warns; ``"refuse"`` runs nothing while a record cannot be written.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from pegboard.calls.audit_log import AUDIT_FILE, AuditLog
from pegboard.config import load_config
from pegboard.errors import AuditUnavailable
from tests.cli.conftest import Invoke, warm_cache, write
from tests.mcp.conftest import SCRIPTED

TOOL = {"name": "tool_0", "inputSchema": {"type": "object"}}


def _setup(config_path: Path, tmp_path: Path, on_failure: str | None) -> Path:
    calls = tmp_path / "calls"
    server = {"command": sys.executable, "args": [SCRIPTED, "--call-log", str(calls)]}
    config: dict[str, object] = {"servers": {"s": server}}
    if on_failure is not None:
        config["audit"] = {"on_failure": on_failure}
    write(config_path, config)
    warm_cache(config_path, "s", [TOOL])
    (load_config(config_path).data_dir / AUDIT_FILE).mkdir(parents=True)  # unwritable
    return calls


def test_refuse_runs_no_call_while_the_audit_cannot_be_written(
    config_path: Path, tmp_path: Path, invoke: Invoke
) -> None:
    calls = _setup(config_path, tmp_path, "refuse")

    result = invoke("tools", "call", "mcp__s__tool_0", "{}")

    assert result.exit_code == 1
    assert '[audit] on_failure = "refuse": the call was not run' in result.stdout + result.stderr
    assert not calls.exists()  # the server never saw the call


@pytest.mark.parametrize("on_failure", [None, "warn"])
def test_warn_the_default_runs_the_call_and_says_the_record_was_dropped(
    config_path: Path,
    tmp_path: Path,
    invoke: Invoke,
    on_failure: str | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls = _setup(config_path, tmp_path, on_failure)

    with caplog.at_level(logging.WARNING, logger="pegboard.calls.audit"):
        result = invoke("tools", "call", "mcp__s__tool_0", "{}")

    assert result.exit_code == 0, result.stderr
    assert calls.read_text().split() == ["tool_0"]
    [warning] = [m for m in caplog.messages if "cannot be written" in m]
    assert warning.endswith("records dropped")


@pytest.mark.parametrize("break_it", ["directory", "parent is a file"])
def test_the_refusing_check_names_the_log_and_passes_once_it_is_writable(
    tmp_path: Path, break_it: str
) -> None:
    if break_it == "directory":
        path = tmp_path / AUDIT_FILE
        path.mkdir()
    else:
        (tmp_path / "data").write_text("not a directory")
        path = tmp_path / "data" / AUDIT_FILE
    log = AuditLog(path, on_failure="refuse")

    with pytest.raises(AuditUnavailable, match=f"The audit log {path} cannot be written"):
        log.check()
    AuditLog(path).check()  # "warn" never refuses

    fixed = AuditLog(tmp_path / "fixed" / AUDIT_FILE, on_failure="refuse")
    fixed.check()
    assert fixed.path.exists()

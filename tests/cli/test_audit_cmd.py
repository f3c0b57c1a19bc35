"""``pegboard audit tail``: the last records of the audit log, as lines or JSON."""

from __future__ import annotations

import json
from pathlib import Path

from pegboard.calls.audit_log import AuditLog
from tests.cli.conftest import Invoke


def test_audit_tail_prints_the_last_records_newest_last(invoke: Invoke, tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "data" / "audit.jsonl")
    for i in range(5):
        log({"time": 0.0, "route": "gateway", "tool": f"t{i}", "outcome": "ok", "duration": 0.5})

    text = invoke("audit", "tail", "-n", "2")
    as_json = invoke("audit", "tail", "--json", "-n", "2")

    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].split()[2:] == ["gateway", "t3", "-", "ok", "500", "ms"]
    assert [r["tool"] for r in json.loads(as_json.stdout)] == ["t3", "t4"]


def test_audit_tail_with_no_log_says_so(invoke: Invoke) -> None:
    result = invoke("audit", "tail")

    assert result.exit_code == 0
    assert result.stdout.startswith("no tool calls recorded yet")

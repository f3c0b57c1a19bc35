"""Which admin UI an approval links to: the configured address, the HTTP gateway's own, or a
``pegboard ui`` running on the same data directory (and not one that has stopped)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pegboard.service.admin_link import (
    UI_FILE,
    announced_ui,
    approval_pages,
    running_ui,
    served_admin,
)


def test_the_configured_address_wins_then_the_gateway_s_own() -> None:
    configured = approval_pages("https://pegboard.example.com/admin/", "http://x/admin", None)
    assert configured is not None
    assert configured("abc") == "https://pegboard.example.com/admin/approvals/abc"
    served = approval_pages(None, served_admin("127.0.0.1", 8765), None)
    assert served is not None
    assert served("abc") == "http://127.0.0.1:8765/admin/approvals/abc"
    assert served_admin("::1", 9) == "http://[::1]:9/admin"
    assert served_admin("0.0.0.0", 8765) is None  # no address a browser could use
    assert approval_pages(None, None, None) is None


def test_a_stdio_gateway_links_to_a_running_ui_only_while_it_runs(tmp_path: Path) -> None:
    pages = approval_pages(None, None, tmp_path)
    assert pages is not None
    assert pages("abc") is None  # no ui
    with announced_ui(tmp_path, "http://127.0.0.1:8766/admin"):
        assert pages("abc") == "http://127.0.0.1:8766/admin/approvals/abc"
    assert not (tmp_path / UI_FILE).exists()
    assert pages("abc") is None


def test_a_note_left_by_a_ui_that_died_is_ignored(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    pid = int(gone.stdout)
    (tmp_path / UI_FILE).write_text(f'{{"url": "http://127.0.0.1:1/admin", "pid": {pid}}}')
    assert running_ui(tmp_path) is None
    (tmp_path / UI_FILE).write_text("not json")
    assert running_ui(tmp_path) is None

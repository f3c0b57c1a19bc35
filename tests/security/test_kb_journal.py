"""Attack surface: SQLite's WAL-reset bug (3.7.0 to 3.51.2; fixed in 3.51.3, backported to
3.50.7 and 3.44.6) corrupts a database that several connections use in WAL mode, as
``pegboard kb add`` and a running gateway do with the knowledge-base file. This machine's
SQLite is 3.40.1, inside the range.

Held: the knowledge-base store uses WAL only on a fixed SQLite, else the rollback journal,
and a file left in WAL mode by an older pegboard is switched back when it is opened.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pegboard.kb.store import connect, journal_mode, wal_is_safe


@pytest.mark.parametrize(
    ("version", "safe"),
    [
        ((3, 40, 1), False),  # this machine's
        ((3, 7, 0), False),
        ((3, 44, 5), False),
        ((3, 44, 6), True),
        ((3, 45, 0), False),  # no backport to 3.45-3.49
        ((3, 49, 9), False),
        ((3, 50, 6), False),
        ((3, 50, 7), True),
        ((3, 51, 2), False),
        ((3, 51, 3), True),
        ((3, 52, 0), True),
        ((4, 0, 0), True),
    ],
)
def test_wal_is_used_only_on_a_sqlite_without_the_wal_reset_bug(
    version: tuple[int, int, int], safe: bool
) -> None:
    assert wal_is_safe(version) is safe
    assert journal_mode(version) == ("WAL" if safe else "DELETE")


def _mode(path: Path) -> str:
    with connect(path) as conn:
        mode: str = conn.execute("PRAGMA journal_mode").fetchone()[0]
    return mode.upper()


def test_a_new_and_a_formerly_wal_knowledge_base_file_use_the_safe_mode(tmp_path: Path) -> None:
    expected = journal_mode()
    fresh = tmp_path / "fresh.sqlite3"
    with connect(fresh, create=True):
        pass
    old = tmp_path / "old.sqlite3"
    with connect(old, create=True):
        pass
    db = sqlite3.connect(old)
    db.execute("PRAGMA journal_mode=WAL")  # as the previous pegboard left it
    db.close()

    assert _mode(fresh) == expected
    assert _mode(old) == expected
    if sqlite3.sqlite_version_info < (3, 44, 6):
        assert expected == "DELETE"

import logging
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pegboard.errors import CatalogError
from pegboard.mcp import SqliteCatalogStore, StoredServer
from pegboard.mcp.store import StoredContent

WRITER = str(Path(__file__).parent / "store_writer.py")


def record(server_id: str = "s", n: int = 2) -> StoredServer:
    tools = tuple({"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(n))
    return StoredServer(
        server_id,
        fingerprint="fp",
        tools=tools,
        tool_hashes={"t0": "h0"},
        fetched_at=12.5,
    )


def test_records_survive_reopening_and_replace_per_server(tmp_path: Path) -> None:
    path = tmp_path / "catalog.db"
    store = SqliteCatalogStore(path)
    store.put(record("a", 2))
    store.put(record("b", 1))
    store.put(record("a", 3))
    store.close()
    reopened = SqliteCatalogStore(path)
    assert reopened.persistent is True
    assert reopened.load_all() == {"a": record("a", 3), "b": record("b", 1)}
    reopened.delete("b")
    assert reopened.get("b") is None
    assert reopened.get("a") == record("a", 3)


def test_a_closed_store_refuses_reads_and_writes_instead_of_answering_empty(
    tmp_path: Path,
) -> None:
    store = SqliteCatalogStore(tmp_path / "catalog.db")
    store.put(record("a", 2))
    store.set_pins("a", {"t0": "h0"})
    store.close()
    store.close()  # closing twice is fine
    message = f"the MCP tool catalog {tmp_path / 'catalog.db'} was closed"
    for use in (
        store.load_all,
        lambda: store.get("a"),
        lambda: store.pins("a"),
        lambda: store.put(record("b", 1)),
        store.load_states,
        lambda: store.version("tools"),
    ):
        with pytest.raises(CatalogError, match=message):
            use()


def test_never_listed_server_keeps_none_distinct_from_empty(tmp_path: Path) -> None:
    store = SqliteCatalogStore(tmp_path / "c.db")
    store.put(StoredServer("cold"))
    store.put(StoredServer("empty", tools=()))
    assert store.get("cold") == StoredServer("cold")
    assert store.get("empty") == StoredServer("empty", tools=())


def test_store_uses_the_rollback_journal_not_wal(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    SqliteCatalogStore(path).put(record())
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


@pytest.mark.parametrize(
    "content",
    [b"this is not a database at all" * 100, b"SQLite format 3\x00" + b"\xff" * 200],
    ids=["garbage", "truncated-header"],
)
def test_corrupt_file_is_moved_aside_and_rebuilt_with_a_warning(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.db"
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="pegboard.mcp.store"):
        store = SqliteCatalogStore(path)
    assert store.persistent is True
    assert store.load_all() == {}
    store.put(record())
    aside = [p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1
    assert (tmp_path / aside[0]).read_bytes() == content
    assert "moved it to" in caplog.text


def test_future_schema_version_is_moved_aside_as_newer_not_corrupt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.db"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    content = path.read_bytes()
    with caplog.at_level(logging.WARNING, logger="pegboard.mcp.store"):
        store = SqliteCatalogStore(path)
    assert store.persistent is True
    moved = [p.name for p in tmp_path.iterdir() if p.name.startswith("c.db.newer-")]
    assert len(moved) == 1
    assert (tmp_path / moved[0]).read_bytes() == content
    assert not [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    (message,) = [r.getMessage() for r in caplog.records]
    assert "written by a newer pegboard (catalog schema version 99;" in message
    assert "unreadable" not in message
    assert "corrupt" not in message


def test_unwritable_location_turns_persistence_off_and_still_works() -> None:
    store = SqliteCatalogStore("/proc/self/pegboard-catalog/c.db")  # /proc refuses mkdir
    assert store.persistent is False
    store.put(record())
    assert store.get("s") == record()


def test_a_path_that_cannot_be_a_directory_turns_persistence_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with caplog.at_level(logging.WARNING, logger="pegboard.mcp.store"):
        store = SqliteCatalogStore(blocker / "sub" / "c.db")
    assert store.persistent is False
    assert "persistence is off" in caplog.text
    store.put(record())
    assert store.load_all() == {"s": record()}


def test_sigkill_while_writing_never_leaves_a_broken_or_half_written_store(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.db"
    for round_no in range(8):
        proc = subprocess.Popen(
            [sys.executable, WRITER, str(path), "crash"], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        last = 0
        for _ in range(round_no % 3 + 1):
            last = int(proc.stdout.readline())
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        store = SqliteCatalogStore(path)
        assert not [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
        stored = store.get("s")
        store.close()
        assert stored is not None
        assert stored.tools is not None
        generations = {tool["gen"] for tool in stored.tools}
        assert len(stored.tools) == 2000
        assert len(generations) == 1
        assert generations.pop() in (last, last + 1)


def test_four_contending_writer_processes_get_no_busy_error_and_lose_no_update(
    tmp_path: Path,
) -> None:
    # 4 x 50 here: every commit fsyncs (synchronous=FULL) and the shared disk makes that slow
    # and erratic (3-20 ms a commit). 4 x 500 standalone took 8.7 s and passes too; before the
    # flock queue it failed with "database is locked" after the 10 s busy timeout.
    path = tmp_path / "c.db"
    procs = [
        subprocess.Popen(
            [sys.executable, WRITER, str(path), "many", f"p{i}", "50"], stderr=subprocess.PIPE
        )
        for i in range(4)
    ]
    errors = [p.communicate(timeout=60)[1].decode() for p in procs]
    assert errors == ["", "", "", ""]
    assert [p.returncode for p in procs] == [0, 0, 0, 0]
    stored = SqliteCatalogStore(path).load_all()
    assert sorted(stored) == sorted(f"p{i}-{j}" for i in range(4) for j in range(50))


def _content(kind: str, *names: str) -> StoredContent:
    return StoredContent("s", kind, "fp", tuple({"name": n, "uri": f"note://{n}"} for n in names))


def test_resource_and_prompt_lists_survive_reopening_and_go_with_their_server(
    tmp_path: Path,
) -> None:
    path = tmp_path / "catalog.sqlite"
    store = SqliteCatalogStore(path)
    store.put(record())
    store.set_content(_content("resources", "a"))
    store.set_content(_content("resources", "a", "b"))
    store.set_content(_content("prompts"))
    store.close()

    store = SqliteCatalogStore(path)
    assert store.content("s", "resources") == _content("resources", "a", "b")
    assert store.content("s", "prompts") == _content("prompts")
    assert store.content("s", "templates") is None
    store.delete("s")
    assert store.content("s", "resources") is None
    assert store.get("s") is None
    store.close()


def _stored(tmp_path: Path) -> Path:
    """A catalog file holding :func:`record`, closed."""
    path = tmp_path / "catalog.sqlite"
    store = SqliteCatalogStore(path)
    store.put(record())
    store.close()
    return path


def _sql(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as db:
        for statement in statements:
            db.execute(statement)
    db.close()


def test_a_content_table_of_another_layout_is_rebuilt_and_the_tool_cache_kept(
    tmp_path: Path,
) -> None:
    path = _stored(tmp_path)
    _sql(
        path,
        "DROP TABLE content",
        "CREATE TABLE content (server_id TEXT, items TEXT)",
        "INSERT INTO content VALUES ('s', '[]')",
    )

    store = SqliteCatalogStore(path)
    assert store.content("s", "resources") is None
    store.set_content(_content("resources", "a"))
    assert store.content("s", "resources") == _content("resources", "a")
    assert store.get("s") == record()
    store.close()


def test_a_catalog_of_this_schema_opens_without_writing_and_a_missing_table_is_made(
    tmp_path: Path,
) -> None:
    # A cache read opens the store: no write transaction (no journal, no fsync, no write
    # lock taken) when every table is there as expected; a dropped table is created again.
    path = _stored(tmp_path)
    written = path.stat().st_mtime_ns, path.read_bytes()

    store = SqliteCatalogStore(path)
    assert store.get("s") == record()
    store.close()
    assert (path.stat().st_mtime_ns, path.read_bytes()) == written

    _sql(path, "DROP TABLE spent")
    store = SqliteCatalogStore(path)
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM spent").fetchone() == (0,)
    db.close()

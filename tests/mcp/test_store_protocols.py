"""One suite for every catalog store (memory, SQLite, PostgreSQL): shared tables with versions
and a change feed, secrets and spent tokens, and (where a store keeps it) the per-replica state
apart from them."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pegboard.mcp import (
    MemoryCatalogStore,
    SqliteCatalogStore,
    StoredServer,
    StoredState,
    store_sqlite,
)
from pegboard.mcp import store as store_module
from pegboard.mcp.store import StoredContent
from pegboard.mcp.store_pg import PostgresCatalogStore

Store = MemoryCatalogStore | SqliteCatalogStore | PostgresCatalogStore


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made: Store
    if request.param == "memory":
        made = MemoryCatalogStore()
    elif request.param == "sqlite":
        made = SqliteCatalogStore(tmp_path / "c.db")
    else:
        made = PostgresCatalogStore(request.getfixturevalue("pg_url"))
    yield made
    made.close()


def test_each_shared_table_has_a_version_that_moves_only_with_its_writes(store: Store) -> None:
    assert [store.version(t) for t in ("tools", "pins", "content")] == [0, 0, 0]
    store.put(StoredServer("a", tools=()))
    tools = store.version("tools")
    assert tools > 0
    assert (store.version("pins"), store.version("content")) == (0, 0)
    store.set_pins("a", {"t": "h"})
    assert store.version("pins") > tools
    assert store.version("tools") == tools
    store.set_content(StoredContent("a", "prompts", "fp", ()))
    assert store.version("content") > store.version("pins")


def test_the_change_feed_lists_every_shared_write_in_order_from_a_position(store: Store) -> None:
    store.put(StoredServer("a", tools=()))
    store.set_pins("b", {"t": "h"})
    store.delete("a")
    feed = [(c.table, c.server_id) for c in store.changes()]
    assert feed == [("tools", "a"), ("pins", "b"), ("tools", "a"), ("content", "a")]
    positions = [c.seq for c in store.changes()]
    assert positions == sorted(positions)
    assert [(c.table, c.server_id) for c in store.changes(positions[1])] == feed[2:]
    assert store.changes(positions[-1]) == []


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_replica_state_is_kept_apart_and_never_moves_the_feed(kind: str, tmp_path: Path) -> None:
    # The PostgreSQL store keeps shared data only: a replica's state stays in its own file.
    store = MemoryCatalogStore() if kind == "memory" else SqliteCatalogStore(tmp_path / "c.db")
    store.put_state(StoredState("a", "fp", "failed", "connection refused", 5.0, 35.0))
    assert store.changes() == []
    assert store.load_states() == {
        "a": StoredState("a", "fp", "failed", "connection refused", 5.0, 35.0)
    }
    assert store.load_all() == {}
    store.delete_state("a")
    assert store.load_states() == {}
    store.close()


def test_a_secret_is_made_once_and_the_same_for_every_reader(store: Store) -> None:
    first = store.secret("rounds")
    assert len(first) == 32
    assert store.secret("rounds") == first
    assert store.secret("other") != first


def test_a_token_is_spent_once_and_forgotten_after_it_expires(store: Store) -> None:
    now = time.time()
    assert store.spend("n1", now + 60) is True
    assert store.spend("n1", now + 60) is False
    assert store.spend("n2", now - 1) is True  # already expired: dropped by the next spend
    assert store.spend("n2", now + 60) is True


def test_the_feed_stays_bounded_and_keeps_each_tables_last_write(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    keep = 10
    monkeypatch.setattr(store_module, "FEED_KEEP", keep)
    monkeypatch.setattr(store_sqlite, "FEED_KEEP", keep)
    store.set_pins("p", {"t": "h"})
    pins = store.version("pins")
    for i in range(2 * keep + 5):
        store.put(StoredServer(f"s{i % 7}", tools=()))
    feed = store.changes()
    assert keep <= len(feed) <= 2 * keep + 1
    assert feed[-1].seq == store.version("tools")
    assert store.version("pins") == pins


def test_sqlite_state_and_feed_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    first = SqliteCatalogStore(path)
    first.put(StoredServer("a", fingerprint="fp", tools=({"name": "t"},)))
    first.put_state(StoredState("a", "fp", "failed", "timed out", 1.0, 31.0))
    version = first.version("tools")
    first.close()
    again = SqliteCatalogStore(path)
    assert again.version("tools") == version
    assert again.load_states()["a"].backoff_until == 31.0
    again.close()


def test_a_version_1_file_keeps_its_trust_pins_and_drops_its_cached_lists(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.db"
    with sqlite3.connect(path) as db:
        db.executescript(
            """
            CREATE TABLE servers (server_id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL,
                tools TEXT, tool_hashes TEXT NOT NULL, fetched_at REAL, status TEXT NOT NULL,
                error TEXT, error_at REAL, backoff_until REAL);
            CREATE TABLE pins (server_id TEXT NOT NULL, tool TEXT NOT NULL, hash TEXT NOT NULL,
                PRIMARY KEY (server_id, tool));
            INSERT INTO servers VALUES ('a', 'fp', '[]', '{}', 1.0, 'connected', NULL, NULL, NULL);
            INSERT INTO pins VALUES ('a', 't', 'h');
            PRAGMA user_version = 1;
            """
        )
    db.close()
    store = SqliteCatalogStore(path)
    assert store.pins("a") == {"t": "h"}
    assert store.load_all() == {}
    store.put(StoredServer("a", tools=()))
    assert store.get("a") == StoredServer("a", tools=())
    store.close()

"""The team store in PostgreSQL: migrations, start-up errors, and two data directories (two
replicas) sharing one catalog. The catalog protocol itself runs in
tests/mcp/test_store_protocols.py against every store, this one included."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest
import tomli_w

from pegboard.calls.fallback import FallbackRateLimiter
from pegboard.calls.limits_pg import PostgresRateLimiter
from pegboard.config import load_config
from pegboard.errors import ConfigError
from pegboard.mcp.store import StoredServer
from pegboard.mcp.store_pg import PostgresCatalogStore
from pegboard.postgres import MIGRATIONS, SCHEMA_VERSION, StoreUnavailable, migrate
from pegboard.postgres.connect import connect
from pegboard.runtime import ToolRuntime, default_components
from tests.mcp.conftest import SCRIPTED
from tests.pg.cluster import PASSWORD, Cluster

PEGBOARD = [sys.executable, "-c", "from pegboard.cli import main; main()"]


def _applied(url: str) -> list[int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT version FROM pegboard.schema_version ORDER BY version")
        return [r[0] for r in rows.fetchall()]


def test_an_empty_database_is_migrated_to_the_latest_version(pg_url: str) -> None:
    store = PostgresCatalogStore(pg_url)
    store.close()
    assert _applied(pg_url) == [m[0] for m in MIGRATIONS]
    assert _applied(pg_url)[-1] == SCHEMA_VERSION


@pytest.mark.parametrize("previous", [m[0] for m in MIGRATIONS[:-1]])
def test_a_database_of_a_previous_version_is_migrated_and_keeps_its_rows(
    pg_url: str, previous: int
) -> None:
    with connect(pg_url) as conn:
        assert migrate(conn, pg_url, target=previous) == previous
        conn.execute(
            "INSERT INTO pegboard.servers VALUES ('a', 'fp', '[{\"name\": \"t\"}]', '{}', 1.0)"
        )
        conn.execute("INSERT INTO pegboard.pins VALUES ('a', 't', 'h')")
    store = PostgresCatalogStore(pg_url)
    try:
        assert _applied(pg_url) == [m[0] for m in MIGRATIONS]
        assert store.get("a") == StoredServer("a", "fp", ({"name": "t"},), {}, 1.0)
        assert store.pins("a") == {"t": "h"}
        assert len(store.secret("rounds")) == 32  # the tables of later versions work
    finally:
        store.close()


def test_replicas_starting_together_on_an_empty_database_migrate_it_once(pg_url: str) -> None:
    errors: list[BaseException] = []
    stores: list[PostgresCatalogStore] = []
    barrier = threading.Barrier(6)

    def start() -> None:
        barrier.wait()
        try:
            stores.append(PostgresCatalogStore(pg_url, max_connections=2))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.close()
    assert errors == []
    assert _applied(pg_url) == [m[0] for m in MIGRATIONS]


def test_a_database_migrated_by_a_newer_pegboard_is_refused(pg_url: str) -> None:
    PostgresCatalogStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO pegboard.schema_version (version, description) VALUES (%s, 'future')",
            (SCHEMA_VERSION + 1,),
        )
    with pytest.raises(StoreUnavailable, match="newer than this pegboard's") as caught:
        PostgresCatalogStore(pg_url)
    assert PASSWORD not in str(caught.value)


def test_a_wrong_password_is_one_line_with_the_password_masked(pg_url: str) -> None:
    wrong = pg_url.replace(PASSWORD, "not-the-password")
    with pytest.raises(StoreUnavailable) as caught:
        PostgresCatalogStore(wrong)
    message = str(caught.value)
    assert "\n" not in message
    assert "password authentication failed" in message
    assert "not-the-password" not in message
    assert "***@127.0.0.1" in message


def _config(tmp_path: Path, url: str | None, **servers: dict[str, object]) -> Path:
    path = tmp_path / "config.toml"
    raw: dict[str, object] = {"servers": servers}
    if url is not None:
        raw["store"] = {"url": url}
    path.write_text(tomli_w.dumps(raw))
    return path


def test_the_store_url_is_validated_and_the_environment_overrides_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match=r"store\.url: must be a postgresql:// URL"):
        load_config(_config(tmp_path, "mysql://u:p@h/db"))
    loaded = load_config(_config(tmp_path, "postgresql://u:p@h/db"))
    assert loaded.store_url == "postgresql://u:p@h/db"
    monkeypatch.setenv("PEGBOARD_STORE_URL", "postgresql://other/db")
    assert loaded.store_url == "postgresql://other/db"


def test_the_component_factory_opens_the_team_store_and_keeps_replica_state_local(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PEGBOARD_DATA_DIR", str(tmp_path / "data"))
    parts = default_components(load_config(_config(tmp_path, pg_url)))
    assert isinstance(parts.store, PostgresCatalogStore)
    assert parts.state is not None
    assert not isinstance(parts.state, PostgresCatalogStore)
    assert (tmp_path / "data" / "catalog.sqlite3").exists()
    assert isinstance(parts.rate_limiter, FallbackRateLimiter)  # [limits] shared by replicas
    assert isinstance(parts.rate_limiter.primary, PostgresRateLimiter)
    parts.store.close()
    for made in parts.made:
        made.close()


def test_an_unreachable_store_at_start_is_one_line_naming_the_url_and_exit_2(
    tmp_path: Path, pg_cluster: Cluster
) -> None:
    closed = pg_cluster.url("team").replace(f":{pg_cluster.port}/", ":1/")
    config = _config(tmp_path, closed)
    env = {"PEGBOARD_DATA_DIR": str(tmp_path / "data"), "PATH": "/usr/bin:/bin"}
    for args in (["serve", "--http", "--port", "0"], ["servers", "status"]):
        done = subprocess.run(
            [*PEGBOARD, "--config", str(config), *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("error: cannot reach the team store postgresql://***@")
        assert "127.0.0.1:1/team" in lines[0]
        assert PASSWORD not in done.stderr


def test_two_data_directories_on_one_store_share_the_cached_tools_and_trust(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh run with one data directory (one replica's machine) is what a runtime with
    another data directory lists, without starting the server."""
    config = _config(
        tmp_path, pg_url, s={"command": sys.executable, "args": [SCRIPTED, "--tools", "3"]}
    )
    env = {"PEGBOARD_DATA_DIR": str(tmp_path / "a"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [*PEGBOARD, "--config", str(config), "servers", "refresh"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("PEGBOARD_DATA_DIR", str(tmp_path / "b"))
    runtime = ToolRuntime(load_config(config))
    try:
        names = sorted(t.name for t in runtime.catalog.list_tools("s"))
        assert names == ["tool_0", "tool_1", "tool_2"]
        assert set(runtime.catalog.cache.read_pins("s")) >= {"tool_0", "tool_1", "tool_2"}
    finally:
        runtime.close()
    with psycopg.connect(pg_url) as conn:
        stored = conn.execute("SELECT tools FROM pegboard.servers WHERE server_id = 's'")
        assert len(json.loads(stored.fetchone()[0])) == 3  # type: ignore[index]

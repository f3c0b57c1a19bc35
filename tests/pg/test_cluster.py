"""The throwaway cluster itself: a fresh database per test, password authentication."""

from __future__ import annotations

import psycopg
import pytest

from tests.pg.cluster import Cluster


def test_each_test_gets_an_empty_database_of_its_own(pg_url: str, pg_cluster: Cluster) -> None:
    with psycopg.connect(pg_url) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone()
        conn.execute("CREATE TABLE mine (x int)")
    assert tables == (0,)
    assert pg_cluster.create_database() != pg_url.rsplit("/", 1)[1]


def test_the_cluster_asks_for_the_password(pg_url: str) -> None:
    wrong = pg_url.replace(":s3cret-test-pw@", ":wrong@")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(wrong, connect_timeout=5).close()

"""The team store's schema in PostgreSQL: versioned migrations, applied at start.

Every table lives in the schema ``pegboard`` of the configured database (nothing else of that
database is touched). ``pegboard.schema_version`` records each applied migration;
:func:`migrate` applies the missing ones in order, each in its own transaction, while holding a
session-level advisory lock, so replicas starting together on an empty database migrate it once
and the others wait. A database migrated by a newer pegboard is refused, not downgraded.

Migrations are append-only: a released one is never edited; a change is a new one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pegboard.postgres.connect import StoreUnavailable, shown_url

if TYPE_CHECKING:
    import psycopg

# pg_advisory_lock key of migrations (any constant other applications are unlikely to pick).
MIGRATION_LOCK = 0x7065_6762_6F61_7264 >> 1  # "pegboard", as a positive bigint
# pg_advisory_xact_lock key writers of the change feed take, so feed positions are committed
# in order (a reader of changes(since) never misses a row committed after a higher one).
FEED_LOCK = MIGRATION_LOCK + 1

MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (
        1,
        "catalog: tool lists, trust pins, resources and prompts, the change feed",
        """
        CREATE TABLE pegboard.servers (
            server_id   text PRIMARY KEY,
            fingerprint text NOT NULL,
            tools       text,
            tool_hashes text NOT NULL,
            fetched_at  double precision
        );
        CREATE TABLE pegboard.pins (
            server_id text NOT NULL,
            tool      text NOT NULL,
            hash      text NOT NULL,
            PRIMARY KEY (server_id, tool)
        );
        CREATE TABLE pegboard.content (
            server_id   text NOT NULL,
            kind        text NOT NULL,
            fingerprint text NOT NULL,
            items       text NOT NULL,
            PRIMARY KEY (server_id, kind)
        );
        CREATE TABLE pegboard.changes (
            seq       bigserial PRIMARY KEY,
            tbl       text NOT NULL,
            server_id text NOT NULL,
            at        double precision NOT NULL,
            origin    text NOT NULL DEFAULT ''
        );
        CREATE INDEX changes_by_table ON pegboard.changes (tbl, seq);
        """,
    ),
    (
        2,
        "sealing keys and spent nonces of the gateway's input-required rounds",
        """
        CREATE TABLE pegboard.secrets (
            name       text PRIMARY KEY,
            value      bytea NOT NULL,
            created_at double precision NOT NULL
        );
        CREATE TABLE pegboard.spent (
            token      text PRIMARY KEY,
            expires_at double precision NOT NULL
        );
        CREATE INDEX spent_by_expiry ON pegboard.spent (expires_at);
        """,
    ),
    (
        3,
        "approval grants, pending approvals and audit records",
        """
        CREATE TABLE pegboard.grants (
            principal       text NOT NULL,
            tool_name       text NOT NULL,
            definition_hash text NOT NULL,
            arguments_hash  text NOT NULL,
            scope           text NOT NULL,
            session_id      text NOT NULL,
            granted_by      text NOT NULL,
            granted_at      double precision NOT NULL,
            expires_at      double precision,
            PRIMARY KEY (principal, tool_name, definition_hash, arguments_hash, scope, session_id)
        );
        CREATE INDEX grants_by_session ON pegboard.grants (session_id);
        CREATE TABLE pegboard.pending_approvals (
            id          text PRIMARY KEY,
            request     text NOT NULL,
            principal   text NOT NULL,
            session_id  text,
            asked_by    text NOT NULL,
            created_at  double precision NOT NULL,
            expires_at  double precision NOT NULL,
            decision    text,
            reason      text NOT NULL,
            decided_by  text,
            decided_at  double precision
        );
        CREATE INDEX pending_by_created ON pegboard.pending_approvals (created_at);
        CREATE TABLE pegboard.audit (
            seq       bigserial PRIMARY KEY,
            record_id text NOT NULL UNIQUE,
            replica   text NOT NULL,
            time      double precision NOT NULL,
            tool      text NOT NULL,
            outcome   text NOT NULL,
            record    text NOT NULL
        );
        CREATE INDEX audit_by_time ON pegboard.audit (time);
        """,
    ),
    (
        4,
        "rate-limit token buckets shared by the replicas",
        """
        CREATE TABLE pegboard.rate_buckets (
            key    text NOT NULL,
            tool   text NOT NULL,
            tokens double precision NOT NULL,
            stamp  double precision NOT NULL,
            passed boolean NOT NULL,
            PRIMARY KEY (key, tool)
        );
        """,
    ),
    (
        5,
        "each replica's view of its servers, with a heartbeat",
        """
        CREATE TABLE pegboard.replicas (
            replica    text PRIMARY KEY,
            host       text NOT NULL,
            pid        integer NOT NULL,
            started_at double precision NOT NULL,
            seen_at    double precision NOT NULL
        );
        CREATE TABLE pegboard.replica_servers (
            replica       text NOT NULL REFERENCES pegboard.replicas ON DELETE CASCADE,
            server_id     text NOT NULL,
            status        text NOT NULL,
            error         text,
            error_at      double precision,
            backoff_until double precision,
            tool_count    integer NOT NULL,
            fetched_at    double precision,
            PRIMARY KEY (replica, server_id)
        );
        """,
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]


def schema_version(conn: psycopg.Connection[Any]) -> int:
    """The database's applied version (0: never migrated)."""
    row = conn.execute("SELECT to_regclass('pegboard.schema_version') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    found = conn.execute("SELECT max(version) FROM pegboard.schema_version").fetchone()
    return int(found[0] or 0) if found else 0


def migrate(conn: psycopg.Connection[Any], url: str, *, target: int = SCHEMA_VERSION) -> int:
    """Apply the migrations after the database's version, up to ``target``; the version now.

    ``conn`` must be in autocommit mode (each migration is its own transaction).
    """
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        conn.execute(
            "CREATE SCHEMA IF NOT EXISTS pegboard;"
            "CREATE TABLE IF NOT EXISTS pegboard.schema_version ("
            " version int PRIMARY KEY, description text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        current = schema_version(conn)
        if current > SCHEMA_VERSION:
            raise StoreUnavailable(
                f"the team store {shown_url(url)} has schema version {current}, newer than "
                f"this pegboard's {SCHEMA_VERSION}: upgrade pegboard on this machine"
            )
        for version, description, sql in MIGRATIONS:
            if current < version <= target:
                with conn.transaction():
                    conn.execute(sql)
                    conn.execute(
                        "INSERT INTO pegboard.schema_version (version, description)"
                        " VALUES (%s, %s)",
                        (version, description),
                    )
                current = version
        return current
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))

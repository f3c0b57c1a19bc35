"""PostgreSQL for the team store (``[store] url = "postgresql://..."``): one schema with
versioned migrations, connections, and the change notifications between replicas.

psycopg 3 and psycopg_pool are the optional extra ``pegboard[postgres]``, imported only when a
PostgreSQL store is configured. The stores built on this (the catalog's in
:mod:`pegboard.mcp.store_pg`) never show the URL's password: :func:`shown_url` is how a URL
appears in every message and log line.
"""

from pegboard.postgres.connect import (
    CHANNEL,
    StoreUnavailable,
    connect,
    open_pool,
    replica_name,
    shown_url,
)
from pegboard.postgres.database import Database
from pegboard.postgres.schema import MIGRATIONS, SCHEMA_VERSION, migrate, schema_version

__all__ = [
    "CHANNEL",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Database",
    "StoreUnavailable",
    "connect",
    "migrate",
    "open_pool",
    "replica_name",
    "schema_version",
    "shown_url",
]

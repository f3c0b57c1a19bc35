"""Connecting to the team store: a checked first connection, then a pool.

An unreachable database at start is one :class:`StoreUnavailable` line naming the URL with its
password masked (``pegboard serve`` exits 2 on it). While serving, the pool reconnects on its
own; a call that finds no connection within :data:`CONNECTION_TIMEOUT` raises instead of
hanging the caller.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import TYPE_CHECKING, Any

from pegboard.core.redact import redact_url
from pegboard.errors import ConfigError, OptionalDependencyMissing

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

# The one notification channel: every shared write notifies it with its change-feed row.
CHANNEL = "pegboard_changes"
CONNECT_TIMEOUT = 5  # s, libpq's connect_timeout for each new connection
CONNECTION_TIMEOUT = 5.0  # s a caller waits for a pooled connection
REPLICA_ENV = "PEGBOARD_REPLICA"  # a replica's name (else host:pid)


class StoreUnavailable(ConfigError):
    """The configured team store cannot be used at start (unreachable, refused, too new)."""


def replica_name() -> str:
    """This process's name among the replicas of a team store (its audit records and its
    row in ``servers status``): ``$PEGBOARD_REPLICA``, else host and process id."""
    return os.environ.get(REPLICA_ENV) or f"{socket.gethostname()}:{os.getpid()}"


def shown_url(url: str) -> str:
    """``url`` as messages show it: user and password masked (see ``redact_url``)."""
    return redact_url(url)


def _driver() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise OptionalDependencyMissing("A PostgreSQL store ([store] url)", "postgres") from exc
    return psycopg


def reason(exc: BaseException, url: str) -> str:
    """The first line of a driver error, never the password (libpq does not echo it, but a
    conninfo parse error may quote the URL)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text.replace(url, shown_url(url))


def connect(url: str, *, autocommit: bool = True) -> psycopg.Connection[Any]:
    """One connection to ``url``; :class:`StoreUnavailable` (one line) if it cannot be made."""
    psycopg = _driver()
    try:
        return psycopg.connect(url, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT)  # type: ignore[no-any-return]
    except (psycopg.Error, ValueError) as exc:
        raise StoreUnavailable(
            f"cannot reach the team store {shown_url(url)}: {reason(exc, url)}. Check [store] "
            "url (or PEGBOARD_STORE_URL) and that the database is running."
        ) from None


def open_pool(url: str, *, max_size: int = 8) -> psycopg_pool.ConnectionPool[Any]:
    """A pool of autocommit connections to ``url`` (checked with one connection first)."""
    connect(url).close()
    try:
        import psycopg_pool
    except ImportError as exc:
        raise OptionalDependencyMissing("A PostgreSQL store ([store] url)", "postgres") from exc
    pool: psycopg_pool.ConnectionPool[Any] = psycopg_pool.ConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT},
        timeout=CONNECTION_TIMEOUT,
        open=False,
        name="pegboard-store",
    )
    pool.open(wait=True, timeout=CONNECT_TIMEOUT * 2)
    # The pool logs every failed reconnection while the database is down; the stores say it
    # once per failed read or write, and the listener once per outage.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    return pool

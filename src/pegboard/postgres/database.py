"""One process's handle on the team store: the schema migrated when opened, one connection
pool shared by every store built on it (catalog, grants, approvals, audit), closed when the
last of them closes."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from pegboard.postgres.connect import connect, open_pool, reason, shown_url
from pegboard.postgres.schema import migrate

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

T = TypeVar("T")


class Database:
    """The team store at ``url`` (see the module docstring).

    Opening it connects, applies the missing migrations (under an advisory lock) and opens the
    pool; :class:`~pegboard.postgres.StoreUnavailable` (one line, password masked) if the
    database cannot be reached. ``origin`` identifies this process's writes in the change feed.
    """

    def __init__(self, url: str, *, max_connections: int = 8) -> None:
        self.url = url
        self.origin = uuid.uuid4().hex
        with connect(url) as conn:
            migrate(conn, url)
        self._pool: psycopg_pool.ConnectionPool[Any] | None = open_pool(
            url, max_size=max_connections
        )
        self._users = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Database({shown_url(self.url)})"

    def acquire(self) -> Database:
        """One more store uses this database (each calls :meth:`release` when it closes)."""
        with self._lock:
            self._users += 1
        return self

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            last = self._users <= 0
        if last:
            self.close()

    @contextmanager
    def connection(
        self, doing: str, error: Callable[[str], Exception]
    ) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection; a driver error (or no connection within the pool's
        timeout) becomes ``error("could not <doing> the team store <url>: <reason>")``."""
        import psycopg
        import psycopg_pool

        pool = self._pool
        if pool is None:
            raise error(f"the team store {shown_url(self.url)} is closed")
        try:
            with pool.connection() as conn:
                yield conn
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise error(
                f"could not {doing} the team store {shown_url(self.url)}: {reason(exc, self.url)}"
            ) from exc

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

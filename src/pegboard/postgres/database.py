"""One process's handle on the team store: the schema migrated when opened, one connection
pool shared by every store built on it (catalog, grants, approvals, audit), closed when the
last of them closes."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from pegboard.errors import CatalogError
from pegboard.postgres.connect import connect, open_pool, reason, shown_url
from pegboard.postgres.schema import migrate

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

T = TypeVar("T")
logger = logging.getLogger("pegboard.store")
LISTEN_RETRY_MIN, LISTEN_RETRY_MAX = 0.5, 10.0
PROBE_S = 1.0  # s between tries of a lost database (the others fail at once meanwhile)
LISTEN_KEEPALIVE = {
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
}


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
        # Lost (a connection failed): until the next probe, callers fail at once instead of
        # each waiting the pool's timeout (see connection()).
        self._lost_at: float | None = None
        self._probe_at = 0.0

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

    @property
    def lost(self) -> bool:
        """True since a connection to the database failed, until one works again."""
        return self._lost_at is not None

    @contextmanager
    def connection(
        self, doing: str, error: Callable[[str], Exception]
    ) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection; a driver error (or no connection within the pool's
        timeout) becomes ``error("could not <doing> the team store <url>: <reason>")``.

        Once a connection failed, the database is :attr:`lost`: one caller per
        :data:`PROBE_S` tries it again (the pool reconnects meanwhile), the others fail at
        once, so nothing waits the pool's timeout on every step while it is down."""
        import psycopg
        import psycopg_pool

        pool = self._pool
        if pool is None:
            raise error(f"the team store {shown_url(self.url)} is closed")
        with self._lock:
            lost_at, now = self._lost_at, time.monotonic()
            if lost_at is not None:
                if now < self._probe_at:
                    raise error(
                        f"could not {doing} the team store {shown_url(self.url)}: unreachable "
                        f"for {now - lost_at:.0f} s"
                    )
                self._probe_at = now + PROBE_S
        try:
            with pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
            with self._lock:
                if self._lost_at is None:
                    self._lost_at = time.monotonic()
                self._probe_at = time.monotonic() + PROBE_S
            raise error(
                f"could not {doing} the team store {shown_url(self.url)}: {reason(exc, self.url)}"
            ) from exc
        except psycopg.Error as exc:
            raise error(
                f"could not {doing} the team store {shown_url(self.url)}: {reason(exc, self.url)}"
            ) from exc
        if lost_at is not None or self._lost_at is not None:
            with self._lock:
                self._lost_at = None

    def notify(self, channel: str, payload: str) -> None:
        """``pg_notify(channel, payload)`` (delivered to every listener, this process's too);
        raises :class:`~pegboard.errors.CatalogError` when the database cannot be reached."""
        with self.connection("notify", CatalogError) as conn:
            conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))

    async def listen(
        self,
        channel: str,
        on_notify: Callable[[str], None],
        *,
        on_connect: Callable[[], None] | None = None,
    ) -> None:
        """Forever: ``LISTEN channel`` on a connection of its own and ``on_notify(payload)`` for
        each notification; ``on_connect()`` after each (re)connection (what was sent while
        it was down is lost: callers catch up from the store). A lost connection is retried
        with a growing delay (up to :data:`LISTEN_RETRY_MAX` s), logged once per outage; TCP
        keepalives notice a vanished database host within about 10 s."""
        import anyio
        import psycopg

        delay, down = LISTEN_RETRY_MIN, False
        alive: dict[str, Any] = dict(LISTEN_KEEPALIVE)
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True, **alive)
                async with conn:
                    await conn.execute(f"LISTEN {channel}")  # a constant of ours
                    if down:
                        logger.warning("team store %s is back", shown_url(self.url))
                    with self._lock:  # a connection works: the pool's callers try again
                        self._lost_at, self._probe_at = None, 0.0
                    delay, down = LISTEN_RETRY_MIN, False
                    if on_connect is not None:
                        on_connect()
                    async for notification in conn.notifies():
                        on_notify(notification.payload)
            except psycopg.Error as exc:
                if not down:
                    logger.warning(
                        "lost the team store %s (%s); changes of other replicas arrive when it "
                        "is back",
                        shown_url(self.url),
                        reason(exc, self.url),
                    )
                down = True
            await anyio.sleep(delay)
            delay = min(delay * 2, LISTEN_RETRY_MAX)

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

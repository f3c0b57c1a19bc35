"""Following the store's change feed: what other processes (gateway replicas, a
``pegboard servers refresh`` on any machine) wrote reaches this catalog at once.

A store that notifies (:class:`~pegboard.mcp.store.ChangeListener`: PostgreSQL's
``LISTEN/NOTIFY``) wakes the :class:`FeedFollower`, which reads the feed after the last position
it took (:meth:`~pegboard.mcp.store.CatalogStore.changes`), skips this store's own writes, and
has the cache take each changed server's tool list, pins or content from the store
(:meth:`~pegboard.mcp.cache.CatalogCache.follow`). The cache publishes ``ToolsChanged``, so the
registry re-syncs and connected clients get list-changed, as after a local refresh. A
notification is only a wake-up: after a lost connection the follower catches up from its
position, so nothing written meanwhile is missed.
"""

from __future__ import annotations

import logging

import anyio
import anyio.to_thread

from pegboard.errors import CatalogError
from pegboard.mcp.cache import CatalogCache
from pegboard.mcp.store import SHARED_TABLES, ChangeListener

logger = logging.getLogger("pegboard.mcp.catalog")
RETRY_S = 1.0  # s between tries of a lost store


class FeedFollower:
    """Takes other processes' writes into ``cache`` (see the module docstring)."""

    def __init__(self, cache: CatalogCache, listener: ChangeListener) -> None:
        self.cache = cache
        self.listener = listener
        self.position = 0
        self._due = anyio.Event()
        self._failing = False

    async def run(self) -> None:
        """Forever (run in a task): listen, and follow the feed on each wake-up."""
        self.position = await anyio.to_thread.run_sync(self._head)
        # What was written between the cache's first read and now is taken here.
        for entry in self.cache.entries():
            for table in ("tools", "pins"):
                try:
                    await self.cache.follow(table, entry.config.id)
                except CatalogError as exc:
                    logger.warning("%s", exc)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.listener.listen, self.wake)
            while True:
                await self._due.wait()
                self._due = anyio.Event()
                if not await self.catch_up():  # the store is lost: again soon, or when woken
                    with anyio.move_on_after(RETRY_S):
                        await self._due.wait()
                    self._due.set()

    def wake(self) -> None:
        """Follow the feed soon (the listener's callback)."""
        self._due.set()

    def _head(self) -> int:
        store = self.cache.store
        return max(store.version(table) for table in SHARED_TABLES)

    async def catch_up(self) -> bool:
        """Take every change after :attr:`position` written by another process; False when
        the store could not be read (the position is kept: the next try starts there)."""
        try:
            changes = await anyio.to_thread.run_sync(self.cache.store.changes, self.position)
            origin = self.listener.origin
            todo = dict.fromkeys((c.table, c.server_id) for c in changes if c.origin != origin)
            for table, server_id in todo:
                await self.cache.follow(table, server_id)
        except CatalogError as exc:
            if not self._failing:  # once per outage
                logger.warning("%s", exc)
            self._failing = True
            return False
        self._failing = False
        if changes:
            self.position = changes[-1].seq
        return True

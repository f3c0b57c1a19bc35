"""The approvals' admin pages as the gateway offers them to clients that open URLs.

:attr:`ApprovalPages.approval_page` (set by ``pegboard serve``, see
:mod:`pegboard.service.admin_link`) gives the page of a pending approval; a 2026-07-28 client
is sent there in its input-required round (:mod:`pegboard.gateway.rounds`), a handshake-era one
by a URL-mode elicitation beside the form, or, when it opens URLs only, by the
``URLElicitationRequiredError`` (-32042) of the 2025-11-25 specification. Such a client is told
by ``notifications/elicitation/complete`` once the question is decided (it may then retry);
:meth:`ApprovalPages.complete_when_decided` watches the questions of the error path in the
pending-approval store, where a decision taken by any process shows.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import anyio
import mcp_types
from mcp.server.session import ServerSession
from mcp.shared.exceptions import UrlElicitationRequiredError

from pegboard.calls.pending import PendingApprovalStore
from pegboard.calls.queue import QUEUE_TTL, ApprovalQueued
from pegboard.gateway.rounds import PAGE_WAIT_S

logger = logging.getLogger("pegboard.gateway")

WATCHED_MAX = 256  # questions waiting to be watched (past that, no completion notice)


class ApprovalPages:
    """Links to the approvals' pages, and telling clients when the page has decided."""

    def __init__(self) -> None:
        # The admin page of a pending approval, by its id (None: no admin UI is known).
        self.approval_page: Callable[[str], str | None] | None = None
        self.wait = PAGE_WAIT_S  # how long a modern retry waits for the page's decision
        # The runtime's pending-approval store, where the error path's questions are watched.
        self.pending: PendingApprovalStore | None = None
        self._watched: set[str] = set()
        self._to_watch, self._watching = anyio.create_memory_object_stream[
            tuple[ServerSession, str]
        ](WATCHED_MAX)

    def available(self) -> bool:
        """Whether an admin UI can be linked to now (a ``pegboard ui`` may stop later)."""
        return self.approval_page is not None and self.approval_page("-") is not None

    def page_of(self, approval_id: str) -> str | None:
        """The page of ``approval_id`` (None: no admin UI now)."""
        return self.approval_page(approval_id) if self.approval_page is not None else None

    def required(
        self, session: ServerSession, queued: ApprovalQueued, page: str, message: str
    ) -> UrlElicitationRequiredError:
        """The -32042 error sending a handshake-era client that only opens URLs to the queued
        question's ``page`` (``message``: the queue's); once a person decided there, the
        client is told, and its retry is settled by the queue."""
        approval_id = queued.approval_id
        if self.pending is not None and approval_id not in self._watched:
            self._watched.add(approval_id)
            with contextlib.suppress(anyio.WouldBlock):
                self._to_watch.send_nowait((session, approval_id))
        asked = (
            f"Approve or deny the call to {queued.tool_name} on pegboard's approval page "
            f"(request {approval_id[:8]}), then retry the same call."
        )
        params = mcp_types.ElicitRequestURLParams(
            message=asked, url=page, elicitation_id=approval_id
        )
        return UrlElicitationRequiredError([params], message=message)

    async def complete(
        self,
        session: ServerSession,
        approval_ids: list[str],
        request_id: mcp_types.RequestId | None = None,
    ) -> None:
        """Tell the client its pages are done with (it may close them, or retry)."""
        for approval_id in approval_ids:
            try:
                await session.send_elicit_complete(approval_id, related_request_id=request_id)
            except Exception as exc:  # the client left meanwhile: nothing to tell
                logger.debug("could not send elicitation/complete: %r", exc)

    async def complete_when_decided(self) -> None:
        """Forever: once a question of the error path is decided, tell its client."""

        async def one(session: ServerSession, approval_id: str) -> None:
            assert self.pending is not None
            try:
                with anyio.move_on_after(QUEUE_TTL + 60):
                    decided = await self.pending.wait(approval_id)
                    if decided.decision is not None:
                        await self.complete(session, [approval_id])
            except Exception as exc:
                logger.debug("not watching approval %s: %r", approval_id[:8], exc)
            finally:
                self._watched.discard(approval_id)

        async with anyio.create_task_group() as tg:
            async for session, approval_id in self._watching:
                tg.start_soon(one, session, approval_id)

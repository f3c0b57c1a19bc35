"""Requests pegboard writes itself on a stdio transport, answered off the reader by id.

The SDK's client costs more CPU per ``tools/call`` than the relay of the call itself: a
request model, a dispatcher with a memory stream each way and a task hop per message, the
answer parsed into a message model and routed through the session. :class:`DirectRequests`
is how :meth:`McpConnection.call_tool <pegboard.mcp.connection.McpConnection.call_tool>`
sends a call on a stdio upstream instead: it writes the request line to the server's stdin
itself, with an id of its own (``"pegboard-<n>"``, never one the SDK's integer ids can take),
and the transport's reader offers every line to :meth:`DirectRequests.take` before anything
else sees it; the answer to one of these ids goes straight to the waiting call. Every other
line (notifications, the server's own requests, answers to the SDK's requests, an answer to an
id nobody waits for) goes on to the SDK's session as before.

What stays the same as the SDK's path: an answer is read with the same parser
(:func:`~pegboard.mcp.framing.parse_line`), so a malformed answer gets the same error, except
for the common answer, read once by ``json.loads``: a response envelope and nothing else
around a plain ``tools/call`` result (:func:`~pegboard.mcp.results.plain_result`, which the
SDK's models would take as it is; a line with many brackets or any ``\\u`` escape, which
the SDK's parser might refuse, is not taken for one), handed to the call as that dict; a
connection that closes fails every waiting call with the SDK's ``CONNECTION_CLOSED`` error; a
call cancelled after its request went out (a timeout, the client's ``notifications/cancelled``)
sends the server ``notifications/cancelled`` for it, as the SDK does.
``PEGBOARD_NO_FAST_CALLS=1`` (:func:`enabled`) sends every call through the SDK's client.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio

from pegboard._switches import switched_off
from pegboard.core.definition import wire_json, wire_loads
from pegboard.mcp.results import plain_result

if TYPE_CHECKING:
    import asyncio

    import mcp_types

# =1: tools/call goes through the SDK's client (here) and its server dispatcher (the gateway's
# stdio fast path, pegboard.gateway.fastpath): the comparison switch, or if this misbehaves
DISABLE_ENV = "PEGBOARD_NO_FAST_CALLS"
ID_PREFIX = "pegboard-"
_MARKER = b'"' + ID_PREFIX.encode()
logger = logging.getLogger("pegboard.mcp.transport")  # the reader's own, as for SDK lines
CANCEL_WRITE_TIMEOUT = 5.0  # s for the courtesy cancel of an abandoned call (the SDK's bound)


def enabled() -> bool:
    """Whether direct requests are on (``PEGBOARD_NO_FAST_CALLS`` unset or not 1/true/yes)."""
    return not switched_off(DISABLE_ENV)


class _Waiter:
    """One request's answer (a future of the running loop) and its deadline's state."""

    __slots__ = ("expired", "future", "sending", "task")

    def __init__(self, future: asyncio.Future[Answer | None], task: asyncio.Task[Any]) -> None:
        self.future = future
        self.task = task
        self.sending = False  # the request line is being written
        self.expired = False  # the deadline passed before the answer came

    def expire(self) -> None:
        """The deadline's timer: stop waiting for the answer; a write still under way (the
        server stopped reading) is cut short by cancelling the call's task, taken back in
        :meth:`DirectRequests.request`."""
        if self.future.done():
            return
        self.expired = True
        if self.sending:
            self.task.cancel()
        else:
            self.future.set_result(None)


Answer: TypeAlias = "mcp_types.JSONRPCResponse | mcp_types.JSONRPCError | dict[str, Any]"
"""What a request gets back: the SDK's message, or a plain ``tools/call`` result as read."""
_ENVELOPE = frozenset({"jsonrpc", "id", "result"})
# Below pydantic's 200 levels of nesting however the brackets fall (a line with more of them
# goes to the SDK's parser, which refuses what is nested too deeply).
_MAX_BRACKETS = 128


class DirectRequests:
    """The requests in flight on one stdio transport (see the module docstring); ``send``
    writes one line to the server (the transport's stdin, safe beside the SDK's writer)."""

    def __init__(self, send: Callable[[bytes], Awaitable[None]]) -> None:
        self._send = send
        self._ids = itertools.count(1)
        self._waiting: dict[str, _Waiter] = {}
        self._closed = False

    async def request(
        self, method: str, params: dict[str, Any], within: float | None = None
    ) -> Answer:
        """Send ``method`` with ``params`` and wait for the server's answer (a response or
        an error message, or the result itself when it is a plain ``tools/call`` result:
        see the module docstring). Raises the SDK's ``MCPError`` (``CONNECTION_CLOSED``) when the
        connection is or becomes closed; :class:`NotJson` (before anything is written) when
        ``params`` holds what JSON cannot carry (``NaN``, say); ``TimeoutError`` when no answer
        came within ``within`` seconds (the server is told the request is abandoned, as for a
        cancel).

        The limit is a timer on the loop beside a future the reader resolves, not an anyio
        cancel scope (~3% of a proxied call's instructions); it bounds the write as well. (Seconds
        rather than a deadline: the caller need not read anyio's clock, four Python calls to
        find its backend.)"""
        import asyncio  # the loop's own (running: this module's reader needs it)

        request_id = f"{ID_PREFIX}{next(self._ids)}"
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        line = _dumps(message)
        if self._closed:
            raise _connection_closed()
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        waiter = self._waiting[request_id] = _Waiter(loop.create_future(), task)
        timer = loop.call_later(within, waiter.expire) if within is not None else None
        try:
            try:
                waiter.sending = True
                await self._send(line)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                raise _connection_closed() from None
            finally:
                waiter.sending = False
            answer = await waiter.future
        except asyncio.CancelledError:
            # The timer's own cancel of a stuck write is a timeout, unless the call was
            # cancelled as well meanwhile (then it stays a cancel).
            timed_out = waiter.expired and task.uncancel() == 0
            if not self._closed:  # a write cut short by the cancel may still have gone out
                await self._cancel(request_id)
            if timed_out:
                raise TimeoutError from None
            raise
        finally:
            if timer is not None:
                timer.cancel()
            self._waiting.pop(request_id, None)
        if waiter.expired:
            if not self._closed:
                await self._cancel(request_id)
            raise TimeoutError
        if answer is None:  # woken by close()
            raise _connection_closed()
        return answer

    async def _cancel(self, request_id: str) -> None:
        """Tell the server a call it was sent is abandoned (best effort, bounded)."""
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "caller cancelled"},
        }
        gone = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)
        with (
            anyio.CancelScope(shield=True),
            anyio.move_on_after(CANCEL_WRITE_TIMEOUT),
            contextlib.suppress(*gone),  # the server is gone: nothing to cancel
        ):
            await self._send(_dumps(note))

    def take(self, line: bytes) -> bool:
        """True if ``line`` answers a request of ours (it is handed to its waiter); False:
        the line is for the SDK's session."""
        if not self._waiting or line.find(_MARKER) < 0:  # (find: see gateway.fastpath)
            return False
        plain = _plain_answer(line)
        if plain is not None:
            waiter = self._waiting.get(plain[0])
            if waiter is None or waiter.future.done():
                return False
            waiter.future.set_result(plain[1])
            return True
        from pegboard.mcp.framing import parse_line, unreadable_answer

        parsed = parse_line(line)
        unreadable = isinstance(parsed, Exception)
        answer = unreadable_answer(line, parsed) if isinstance(parsed, Exception) else parsed
        if answer is None:
            return False
        import mcp_types

        message = answer.message
        if not isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            return False
        waiter = self._waiting.get(message.id) if isinstance(message.id, str) else None
        if waiter is None or waiter.future.done():
            return False  # an id nobody waits for: the SDK logs and drops it, as before
        if unreadable:
            logger.warning(
                "an MCP server sent an answer that could not be read (%s)", type(parsed).__name__
            )
        waiter.future.set_result(message)
        return True

    def close(self) -> None:
        """The connection closed: every waiting call fails with ``CONNECTION_CLOSED``."""
        self._closed = True
        for waiter in self._waiting.values():
            if not waiter.future.done():
                waiter.future.set_result(None)


def _plain_answer(line: bytes) -> tuple[str, dict[str, Any]] | None:
    """(id, result) of a response of ours around a plain result, read once; None: anything
    else (the SDK's parser reads it)."""
    if line.count(b"[") + line.count(b"{") > _MAX_BRACKETS or line.find(b"\\u") >= 0:
        return None  # deep, or \u-escaped (a lone surrogate, which the SDK's parser refuses)
    try:
        message = wire_loads(line)
    except (ValueError, RecursionError):
        return None
    if type(message) is not dict or message.keys() != _ENVELOPE:
        return None
    request_id, result = message["id"], plain_result(message["result"])
    if message["jsonrpc"] != "2.0" or type(request_id) is not str or result is None:
        return None
    return request_id, result


class NotJson(Exception):
    """Parameters JSON cannot carry as they are (the SDK's serializer turns ``NaN`` into
    ``null``; the caller sends such a request through it)."""


def _dumps(message: dict[str, Any]) -> bytes:
    try:
        text = wire_json(message)
    except (TypeError, ValueError, RecursionError) as exc:
        raise NotJson(str(exc)) from None
    return text.encode() + b"\n"


def _connection_closed() -> Exception:
    import mcp_types
    from mcp.shared.exceptions import MCPError

    return MCPError(code=mcp_types.CONNECTION_CLOSED, message="Connection closed")

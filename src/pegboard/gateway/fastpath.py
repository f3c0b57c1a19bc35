"""A fast path for plain ``tools/call``, ``tools/list`` and ``ping`` requests of a stdio client.

``tools/list`` and ``ping`` are answered from :meth:`Gateway.tools_list_json` (serialized once
per change of the exposed tools) as soon as the protocol version is known, from the SDK's
session or from the early reader's handshake (:mod:`pegboard.gateway.early`); a modern
(2026-07-28) client's ``tools/list`` names its version in its ``_meta``. Every other modern
request goes to the SDK (approval rounds, ``subscriptions/listen``).

Proxying a call through the SDK's server dispatcher (JSON-RPC model validation twice, a
middleware chain, an OpenTelemetry span, a request clock, a task per request) costs more CPU
than the call itself. For the common case, a ``tools/call`` with only ``name`` and
``arguments`` from an initialized client that cannot be asked for approval (no elicitation
capability), :class:`FastToolCalls` answers the line directly: it runs the same
:meth:`~pegboard.gateway.server.Gateway.call` as the SDK handler, and writes the response line
:func:`~pegboard.gateway.server.call_response` makes (the SDK's own per-version serializer,
no message models). Everything else (a request with
``_meta``, e.g. a progress token; a client that can elicit; anything before the handshake) goes
to the SDK unchanged. ``notifications/cancelled`` for a fast call cancels it (no response is
sent, as the protocol asks); the notification still reaches the SDK, which ignores the id.
``PEGBOARD_NO_FAST_CALLS=1`` turns the fast path off (for comparison, or if it misbehaves),
with the direct upstream requests of :mod:`pegboard.mcp.direct`.
"""

from __future__ import annotations

import contextlib
import json
import logging
from functools import partial
from typing import Any

import anyio
import mcp_types
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from pegboard.core.definition import wire_loads
from pegboard.gateway.approval import client_can_elicit, connection_of
from pegboard.gateway.ready import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY, response
from pegboard.gateway.server import Gateway, answer_line
from pegboard.gateway.stdio import Answering, AnswerTask, Outgoing, Replies
from pegboard.mcp import direct

logger = logging.getLogger("pegboard.gateway")

_CALL = b'"tools/call"'
_CANCELLED = b'"notifications/cancelled"'
_LIST = b'"tools/list"'
_PING = b'"ping"'
_PLAIN_PARAMS = frozenset({"name", "arguments"})
# One for every answer (suppress is reentrant): a writer that closed is a client gone.
_CLIENT_GONE = contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError)


class FastToolCalls:
    """Takes eligible ``tools/call`` lines off the stdio reader (see the module docstring)."""

    def __init__(self, gateway: Gateway, version: str | None = None) -> None:
        self._gateway = gateway
        self._version = version  # negotiated by the early reader, if it answered initialize
        self.enabled = direct.enabled()
        self._running: dict[int | str, AnswerTask] = {}

    def __call__(
        self,
        line: bytes,
        reply: Replies,
        answering: Answering,
    ) -> bool:
        """True if this line was taken (a task answers it); False: give it to the SDK."""
        # bytes.find, not `in`: `in` first tries the needle as an integer, and the TypeError
        # it makes and drops costs ~2k instructions a test (five a call).
        find = line.find
        if self.enabled and (find(_LIST) >= 0 or find(_PING) >= 0):
            answer = self._list_or_ping(line)
            if answer is not None:
                answering.start_soon(reply.send, answer)
                return True
        if not self.enabled or (find(_CALL) < 0 and find(_CANCELLED) < 0):
            return False
        session = self._gateway.stdio_session
        if session is None or client_can_elicit(session):
            return False
        connection = connection_of(session)
        if not connection.initialize_accepted:
            return False
        try:
            message = wire_loads(line)
        except (ValueError, RecursionError):  # the SDK reports what is wrong with the line
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        params = message.get("params")
        if message.get("method") == "notifications/cancelled":
            cancelled = params.get("requestId") if isinstance(params, dict) else None
            if isinstance(cancelled, int | str) and cancelled in self._running:
                self._running[cancelled].cancel()
            return False
        request_id = message.get("id")
        if (
            message.get("method") != "tools/call"
            or isinstance(request_id, bool)
            or not isinstance(request_id, int | str)
            or request_id in self._running
            or not isinstance(params, dict)
            or not params.keys() <= _PLAIN_PARAMS
            or not isinstance(params.get("name"), str)
            or not isinstance(params.get("arguments") or {}, dict)
        ):
            return False
        args = (request_id, params["name"], params.get("arguments") or {}, reply)
        task = answering.start_soon(self._answer, *args)
        self._running[request_id] = task
        task.add_done_callback(partial(self._finished, request_id))
        return True

    def _finished(self, request_id: int | str, task: AnswerTask) -> None:
        if self._running.get(request_id) is task:  # (also when cancelled before it ran)
            del self._running[request_id]

    def _list_or_ping(self, line: bytes) -> bytes | None:
        try:
            message = wire_loads(line)
        except (ValueError, RecursionError):
            return None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return None
        request_id, params = message.get("id"), message.get("params")
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            return None
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta:
            version = self._modern_version(meta)
        elif message.get("method") == "ping" and isinstance(params, dict | None):
            return response(request_id, {})
        else:
            version = self._protocol_version()
        if message.get("method") != "tools/list" or version is None:
            return None
        if params is not None and (not isinstance(params, dict) or set(params) - {"_meta"}):
            return None  # a cursor, or something odd: the SDK answers
        result = self._gateway.tools_list_json(version)
        return b'{"jsonrpc":"2.0","id":%s,"result":%s}\n' % (
            json.dumps(request_id).encode(),
            result,
        )

    def _modern_version(self, meta: dict[str, Any]) -> str | None:
        """The version of a complete 2026-07-28 envelope, on a connection of that era."""
        version = meta[PROTOCOL_VERSION_KEY]
        if self._version is not None or self._gateway.stdio_session is not None:
            return None  # a handshake-era connection: the SDK refuses modern requests on it
        if version not in MODERN_PROTOCOL_VERSIONS or CLIENT_CAPABILITIES_KEY not in meta:
            return None
        return str(version)

    def _protocol_version(self) -> str | None:
        session = self._gateway.stdio_session
        if session is not None:
            connection = connection_of(session)
            if connection.initialize_accepted:
                return str(connection.protocol_version)
        return self._version

    async def _answer(
        self,
        request_id: int | str,
        name: str,
        arguments: dict[str, Any],
        reply: Replies,
    ) -> None:
        session = self._gateway.stdio_session
        assert session is not None
        message: Outgoing | None = None
        try:
            # A client's cancel cancels this task (no response); a plain task, not an anyio
            # cancel scope around the call (~3% of a call's instructions).
            answer = await self._gateway.call_answer(session, request_id, name, arguments)
            version = connection_of(session).protocol_version
            message = answer_line(request_id, str(version), answer)
        except MCPError as exc:  # a protocol answer (the -32042 URL elicitation required)
            error = mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=exc.error)
            message = SessionMessage(error)
        except Exception as exc:
            logger.exception("tools/call %s failed", name)
            data = mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR, message=str(exc))
            message = SessionMessage(
                mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=data)
            )
        assert message is not None
        with _CLIENT_GONE:  # the client may have gone away while the call ran
            await reply.send(message)

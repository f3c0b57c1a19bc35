"""Newline-delimited JSON-RPC framing for stdio, and the answer to a line that is no message.

Shared by the gateway's server transport (:mod:`pegboard.gateway.stdio`) and the client side
of stdio upstreams (:mod:`pegboard.mcp.transport`): :class:`LineSplitter` cuts a byte stream
into lines with a length cap, :func:`parse_line` and :func:`encode_message` convert a line
from and to the SDK's message. A request that cannot be served still gets an
answer when it has an id (JSON-RPC 2.0): -32700 for a line that is not JSON (id null, or the
id when it can be read off the top level), -32600 for JSON that is not a valid message.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types
from mcp.shared.message import SessionMessage

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
UNREADABLE = "pegboard: unreadable answer"  # the ``data`` of an answer made by unreadable_answer


class LineSplitter:
    """Feed chunks, get complete lines (without ``\\n``; blank ones skipped). A line longer
    than ``max_bytes`` is dropped; :attr:`dropped` counts them (the caller reports it)."""

    def __init__(self, max_bytes: int, initial: bytes = b"") -> None:
        self.max_bytes = max_bytes
        self.dropped = 0
        self._buffered = initial
        self._oversized = False

    def feed(self, chunk: bytes) -> list[bytes]:
        *lines, self._buffered = (self._buffered + chunk).split(b"\n")
        out = []
        for line in lines:
            if self._oversized:  # the tail of a line already dropped
                self._oversized = False
                continue
            if len(line) > self.max_bytes:  # whole in one chunk (e.g. the early reader's)
                self.dropped += 1
            elif line.strip():
                out.append(line)
        if len(self._buffered) > self.max_bytes:
            self._buffered, self._oversized = b"", True
            self.dropped += 1
        return out


def _top_level(line: bytes) -> tuple[Any, set[str]]:
    """The ``id`` (an int or str, else None) and the keys of a JSON object too deep for
    ``json.loads``, read off its top level in one pass."""
    text = line.decode("utf-8", "replace")
    depth, i, n = 0, 0, len(text)
    request_id: Any = None
    keys: set[str] = set()
    while i < n:
        ch = text[i]
        if ch == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            rest = text[end + 1 : end + 64].lstrip()
            if depth == 1 and rest.startswith(":"):
                key = text[i + 1 : end]
                keys.add(key)
                if key == "id":
                    try:
                        value, _ = json.JSONDecoder().raw_decode(
                            text[end + 1 :].lstrip()[1:].lstrip()
                        )
                    except ValueError:
                        value = None
                    request_id = value if isinstance(value, int | str) else None
            i = end + 1
            continue
        depth += ch in "{["
        depth -= ch in "}]"
        i += 1
    return request_id, keys


def _top_level_id(line: bytes) -> Any:
    return _top_level(line)[0]


def unreadable_answer(line: bytes, exc: Exception) -> SessionMessage | None:
    """An error answer standing in for a server's response that could not be read (nested
    too deeply, or not a valid message), so the request it answers fails at once, saying why,
    instead of waiting for its timeout. None when ``line`` is no response to a request."""
    request_id, keys = _top_level(line)
    if isinstance(request_id, bool) or request_id is None or "method" in keys:
        return None
    if not keys & {"result", "error"}:
        return None
    text = str(exc)
    if "recursion limit" in text:
        why = "nested too deeply (the JSON parser stops at 200 levels)"
    elif "Invalid JSON" in text or "json_invalid" in text:
        why = "not valid JSON"
    else:
        why = "not a valid JSON-RPC response"
    error = mcp_types.ErrorData(
        code=INTERNAL_ERROR,
        message=f"the server's answer could not be read: {why}",
        data=UNREADABLE,
    )
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def rejection(line: bytes, problem: str) -> bytes | None:
    """The error response to ``line``, which failed validation with ``problem``; None for a
    notification (no id: nothing may be answered)."""
    try:
        message = json.loads(line)
    except RecursionError:
        request_id = _top_level_id(line)
        code, text = INVALID_REQUEST, "Invalid request: nested too deeply"
    except ValueError:
        request_id, code, text = None, PARSE_ERROR, "Parse error: the line is not JSON"
    else:
        request_id = message.get("id") if isinstance(message, dict) else None
        if isinstance(message, dict) and "id" not in message:
            return None
        if isinstance(request_id, bool) or not isinstance(request_id, int | float | str):
            request_id = None  # a fractional id is echoed, so the client can match the answer
        code, text = INVALID_REQUEST, f"Invalid request: {problem}"
    error = {"code": code, "message": text}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode() + b"\n"


def parse_line(line: bytes) -> SessionMessage | Exception:
    """One line as the SDK's message, or the exception that says why it is none.

    A request whose ``id`` is no string or integer (``1.5``, ``null``, ``true``) is not a
    notification, as the SDK's union would read it (leaving it unanswered): it is refused.
    """
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:
        return exc
    if isinstance(message, mcp_types.JSONRPCNotification) and b'"id"' in line:
        try:
            has_id = "id" in json.loads(line)
        except (ValueError, RecursionError):
            has_id = True
        if has_id:
            return ValueError("id: must be a string or an integer")
    return SessionMessage(message)


def encode_message(item: SessionMessage) -> bytes:
    """One message as a line (with its newline)."""
    return item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"

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


def _top_level_id(line: bytes) -> Any:
    """The ``id`` of a JSON object too deep for ``json.loads``, read off its top level."""
    text = line.decode("utf-8", "replace")
    depth, i, n = 0, 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            if depth == 1 and text[i + 1 : end] == "id":
                rest = text[end + 1 :].lstrip()
                if rest.startswith(":"):
                    try:
                        value, _ = json.JSONDecoder().raw_decode(rest[1:].lstrip())
                    except ValueError:
                        return None
                    return value if isinstance(value, int | str) else None
            i = end + 1
            continue
        depth += ch in "{["
        depth -= ch in "}]"
        i += 1
    return None


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
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            request_id = None
        code, text = INVALID_REQUEST, f"Invalid request: {problem}"
    error = {"code": code, "message": text}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode() + b"\n"


def parse_line(line: bytes) -> SessionMessage | Exception:
    """One line as the SDK's message, or the exception that says why it is none."""
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


def encode_message(item: SessionMessage) -> bytes:
    """One message as a line (with its newline)."""
    return item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"

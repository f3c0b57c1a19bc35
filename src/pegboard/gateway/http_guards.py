"""ASGI guards in front of the SDK's streamable HTTP app.

:class:`HeaderShapeMiddleware` refuses a Host or Origin that is not a plain host and port
(the SDK's allow-list pattern ``127.0.0.1:*`` is a prefix match). :class:`RequestIdMiddleware`
answers a request whose ``id`` is no string or integer, which the SDK's message union takes
for a notification and leaves unanswered (the stdio transport does the same through
:func:`pegboard.mcp.framing.parse_line`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pegboard.mcp.framing import parse_line, rejection

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send


async def _refuse(send: Send, status: int, content_type: bytes, body: bytes) -> None:
    headers = [(b"content-type", content_type)]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# A Host is a name or address and an optional numeric port, an Origin a scheme and such a
# Host. The SDK's "127.0.0.1:*" pattern is a prefix match, so "127.0.0.1:80@evil.com" passed.
_HOST = r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::[0-9]{1,5})?"
_HOST_SHAPE = re.compile(_HOST)
_ORIGIN_SHAPE = re.compile(rf"https?://{_HOST}|null")


def plain_host_and_origin(host: bytes, origin: bytes | None) -> bool:
    """Whether a Host (``b""`` when absent) and an Origin (None when absent) are each a plain
    host and port (:class:`HeaderShapeMiddleware`'s test)."""
    return _HOST_SHAPE.fullmatch(host.decode("latin-1")) is not None and (
        origin is None or _ORIGIN_SHAPE.fullmatch(origin.decode("latin-1")) is not None
    )


class HeaderShapeMiddleware:
    """Refuses (421) a request whose Host or Origin header is not a plain host and port, before
    the SDK's Host/Origin allow-list sees it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers", ()))
            if not plain_host_and_origin(headers.get(b"host", b""), headers.get(b"origin")):
                body = b"refused: the Host or Origin header is not a plain host and port\n"
                await _refuse(send, 421, b"text/plain", body)
                return
        await self.app(scope, receive, send)


# An "id" whose value is no string or integer: a number with a fraction or exponent, null,
# true/false, an array or object. Only bodies that match are parsed here (rarely: the SDK
# parses every body anyway); a match inside params is a false alarm the parse clears.
_ODD_ID = re.compile(rb'"id"\s*:\s*(?:-?\d+(?:\.\d*)?[eE.]|null|true|false|[\[{])')


def may_have_odd_id(body: bytes) -> bool:
    """Whether :class:`RequestIdMiddleware` parses ``body`` (an ``id`` that may be no string
    or integer); False: it passes the body on untouched."""
    return _ODD_ID.search(body) is not None


class RequestIdMiddleware:
    """Answers (400, a JSON-RPC -32600 error) a POSTed request whose ``id`` is no string or
    integer, instead of the SDK's 202 for what it reads as a notification."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        body = b""
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        if may_have_odd_id(body):
            parsed = parse_line(body)
            if isinstance(parsed, ValueError) and str(parsed).startswith("id:"):
                answer = rejection(body, str(parsed))
                if answer is not None:
                    await _refuse(send, 400, b"application/json", answer)
                    return
        replay = iter(messages)

        async def replayed() -> Message:
            return next(replay, None) or await receive()

        await self.app(scope, replayed, send)

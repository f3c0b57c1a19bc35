"""What a test scripts (turns, calls) and what the server records (requests)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Api = Literal["openai", "responses", "anthropic"]


@dataclass(frozen=True)
class Call:
    """A tool call the model makes. ``arguments`` as a string is sent verbatim (broken JSON,
    double-encoded JSON: whatever a test needs); ``id`` defaults to ``call_<n>``/``toolu_<n>``."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Request:
    """One request the server received (``headers`` keys are lower-case)."""

    api: Api
    path: str
    headers: Mapping[str, str]
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Chat/Messages ``messages``, or the Responses ``input`` items (a string input as
        one user message)."""
        if self.api == "responses":
            given = self.body.get("input") or []
            return [{"role": "user", "content": given}] if isinstance(given, str) else list(given)
        return list(self.body.get("messages") or [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or [])

    @property
    def tool_names(self) -> list[str]:
        return [t.get("name") or t.get("function", {}).get("name") for t in self.tools]

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def structured(self) -> bool:
        """A structured-output request: a JSON-schema response format (Chat, Responses) or
        one forced tool (Anthropic). ``Turn(structured=..., match=lambda r: r.structured)``."""
        body = self.body
        response_format = (body.get("response_format") or {}).get("type")
        text_format = ((body.get("text") or {}).get("format") or {}).get("type")
        forced = (body.get("tool_choice") or {}) if self.api == "anthropic" else {}
        return "json_schema" in (response_format, text_format) or forced.get("type") == "tool"


@dataclass(frozen=True)
class Turn:
    """One scripted answer.

    ``text`` and/or ``tool_calls``; or ``structured``, a JSON value for a structured-output
    request (OpenAI: the message content; Anthropic: the input of the forced tool); or an
    error: ``status`` (e.g. 429, 503) with ``headers`` such as ``{"Retry-After": "0.01"}``.
    ``match`` (a predicate on the :class:`Request`) makes the turn refuse other requests.
    ``hang`` never answers (until the server closes): for client timeouts. ``cut`` streams
    only the first half of the events, then closes the connection: ``"broken"`` after
    promising the whole body (a transport error), ``"clean"`` as if the stream had ended.
    """

    text: str = ""
    tool_calls: Sequence[Call] = ()
    structured: Any = None
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    error: str = "scripted error"
    match: Callable[[Request], bool] | None = None
    usage: tuple[int, int] = (12, 7)
    hang: bool = False
    cut: Literal["broken", "clean"] | None = None


def error_body(api: Api, status: int, message: str) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}
    error_type = kind.get(status, "api_error")
    if api == "anthropic":
        return {"type": "error", "error": {"type": error_type, "message": message}}
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}


def arguments_text(call: Call) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def words(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text)

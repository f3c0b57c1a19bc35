"""A provider-neutral tool call, parsed from whatever a provider sent.

Providers send arguments as a JSON string (OpenAI) or an object (Anthropic, MCP). A string that
is not valid JSON, or JSON that is not an object, is not dropped and not guessed at: the call
keeps ``raw_arguments`` and a ``parse_error`` so the dispatcher can repair it or tell the model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model made.

    ``arguments`` is the parsed object (``{}`` when parsing failed). ``raw_arguments`` is the
    provider's original string when it was a string. ``parse_error`` says why the arguments
    could not be used as an object; ``None`` means they could.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    parse_error: str | None = None

    @property
    def is_valid(self) -> bool:
        return self.parse_error is None

    @classmethod
    def parse(cls, id: str, name: str, arguments: Any) -> ToolCall:
        """Build a call from a JSON string, a mapping, or nothing (``None`` / ``""`` -> ``{}``)."""
        if arguments is None:
            return cls(id, name)
        if isinstance(arguments, Mapping):
            return cls(id, name, dict(arguments))
        if isinstance(arguments, bytes | bytearray):
            arguments = arguments.decode("utf-8", "replace")
        if not isinstance(arguments, str):
            kind = type(arguments).__name__
            return cls(id, name, {}, json.dumps(arguments, default=str), _not_object(kind))
        if not arguments.strip():
            return cls(id, name, {}, arguments)
        try:
            value = json.loads(arguments)
        except json.JSONDecodeError as exc:
            error = (
                f"arguments are not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            )
            return cls(id, name, {}, arguments, error)
        if not isinstance(value, dict):
            return cls(id, name, {}, arguments, _not_object(_json_kind(value)))
        return cls(id, name, value, arguments)


def _not_object(kind: str) -> str:
    return f"arguments must be a JSON object, got {kind}"


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array"


def as_dict(value: Any) -> dict[str, Any]:
    """A provider object as a plain dict: mappings as-is, SDK (pydantic) objects dumped."""
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump(mode="json", exclude_none=False)
        if isinstance(dumped, dict):
            return dumped
    raise TypeError(f"expected a mapping or a pydantic model, got {type(value).__name__}")

"""Provider-neutral tool results: what a tool returned, in the parts a model can be shown.

Adapters turn a :class:`ToolOutput` into an OpenAI or Anthropic tool-result message, and the
gateway into MCP content. Binary data (images, audio, blobs) stays in its own part, base64
encoded, and never inside text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pegboard.core.frozen import quick_init


@quick_init
@dataclass(frozen=True, slots=True)
class TextPart:
    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    data: str  # base64
    mime_type: str


@dataclass(frozen=True, slots=True)
class AudioPart:
    data: str  # base64
    mime_type: str


@dataclass(frozen=True, slots=True)
class ResourcePart:
    """An embedded or linked resource. Exactly one of ``text`` / ``blob`` is set when embedded."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None  # base64
    name: str | None = None


ContentPart = TextPart | ImagePart | AudioPart | ResourcePart


@quick_init
@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What one tool call produced, as the model should see it."""

    parts: tuple[ContentPart, ...] = ()
    is_error: bool = False
    structured: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def text(cls, text: str, *, is_error: bool = False) -> ToolOutput:
        return cls(parts=(TextPart(text),), is_error=is_error)

    @classmethod
    def error(cls, message: str) -> ToolOutput:
        return cls(parts=(TextPart(message),), is_error=True)

    def as_text(self) -> str:
        """All text parts joined; media become short placeholders (never base64 in text)."""
        chunks: list[str] = []
        for part in self.parts:
            if isinstance(part, TextPart):
                chunks.append(part.text)
            elif isinstance(part, ImagePart):
                chunks.append(f"[image: {part.mime_type}]")
            elif isinstance(part, AudioPart):
                chunks.append(f"[audio: {part.mime_type}]")
            elif part.text is not None:
                chunks.append(part.text)
            else:
                chunks.append(f"[resource: {part.uri}]")
        if not chunks and self.structured is not None:
            chunks.append(_dump(self.structured))
        return "\n".join(chunks)


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def to_tool_output(value: Any) -> ToolOutput:
    """Default ``to_model_output``: strings as text, other values as JSON text."""
    if isinstance(value, ToolOutput):
        return value
    if isinstance(value, str):
        return ToolOutput.text(value)
    if value is None:
        return ToolOutput.text("null")
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    return ToolOutput(parts=(TextPart(_dump(value)),), structured=value)

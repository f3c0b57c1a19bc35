"""What a sandbox run produced: return value, printed text, tool-call log, lifted images."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pegboard.core.output import ImagePart, TextPart, ToolOutput


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One call the code made: the wire name, its arguments, and how it ended."""

    name: str
    args: Mapping[str, Any]
    ok: bool
    seconds: float
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ExecResult:
    """The outcome of one run.

    ``error`` is None when the code ran to the end; otherwise one line naming what stopped it
    (the code's own exception with its line, or the limit that was hit). ``printed`` holds
    what ``print`` wrote (never the process's stdout), also on failure. Images that tools
    returned are lifted out into ``images``; the code saw a placeholder in their place.
    """

    value: Any = None
    printed: str = ""
    calls: tuple[ToolCallRecord, ...] = ()
    images: tuple[ImagePart, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(slots=True)
class ImageSink:
    """Collects images out of tool results during one run."""

    images: list[ImagePart] = field(default_factory=list)

    def lift(self, output: ToolOutput) -> Any:
        """The value the code sees for ``output``; its images go to the sink.

        Structured content when the tool has it; else its text, parsed when it is a JSON
        object or array (MCP tools often answer JSON as text); each image becomes
        ``[image N: <mime>]`` in the text.
        """
        texts: list[str] = []
        for part in output.parts:
            if isinstance(part, ImagePart):
                self.images.append(part)
                texts.append(f"[image {len(self.images)}: {part.mime_type}]")
            elif isinstance(part, TextPart):
                texts.append(part.text)
            else:
                texts.append(ToolOutput(parts=(part,)).as_text())
        if output.structured is not None:
            return output.structured
        text = "\n".join(texts)
        stripped = text.strip()
        if stripped[:1] in ("{", "["):
            try:
                return json.loads(stripped)
            except ValueError:
                return text
        return text


def as_json_value(value: Any) -> tuple[Any, int]:
    """``value`` as the JSON the model is sent (parsed back) and its size in bytes.

    Raises ``ValueError`` naming the problem for a value JSON cannot carry: an integer of more
    than 4,300 digits (``10**5000``), NaN or infinity, nesting too deep to encode.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=repr)
        return json.loads(text), len(text.encode("utf-8"))
    except RecursionError:
        raise ValueError("it is nested too deeply") from None
    except ValueError as exc:
        why = str(exc).split(";")[0].rstrip(".")
        if "float" in why:
            why = "NaN and infinity are not JSON numbers"
        raise ValueError(why) from None

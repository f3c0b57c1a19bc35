"""Poisoning flags: hidden-instruction markers in tool descriptions and schemas.

:func:`poison_flags` names what looks like a tool-poisoning attempt (Invariant Labs, Apr 2025):
Unicode tag characters (U+E0000-E007F), zero-width and bidi controls, ``<IMPORTANT>``-style
blocks, and instructions to read files or credentials or to call other tools. It is a
heuristic shown to people (``servers status``, ``tools inspect``); a flag never approves or
hides anything. :func:`strip_invisible` removes the invisible characters from what the model
sees (applied when MCP tools become registry entries).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pegboard.core.redact import shown

_TAGS = re.compile("[\U000e0000-\U000e007f]")
_ZERO_WIDTH = re.compile("[\u200b-\u200d\u2060-\u2064\ufeff\u180e\u00ad]")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_INVISIBLE = re.compile(f"{_TAGS.pattern}|{_ZERO_WIDTH.pattern}|{_BIDI.pattern}")
_BLOCK = re.compile(
    r"<\s*/?\s*(important|system|instructions?|secret|hidden|admin|assistant)\b[^>]*>", re.I
)
_READS = re.compile(
    r"(~/\.|\.ssh|id_rsa|\.env\b|\.aws|credentials?|api[_ -]?keys?|passwords?|private key"
    r"|/etc/passwd|mcp\.json|\.cursor|read (the |any )?files?)",
    re.I,
)
_CALLS = re.compile(
    r"\b(before|after|instead of|first)\b.{0,40}\b(call|use|invoke|run)\b.{0,30}\btools?\b"
    r"|\b(call|invoke|use) (the )?(tool_invoke|tool_exec|mcp__\w+)"
    r"|do not (tell|mention|inform) the user|don'?t (tell|mention)",
    re.I | re.S,
)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def poison_flags(raw: Mapping[str, Any]) -> list[str]:
    """Flags of one MCP tool definition (its description, title, schemas), sorted."""
    text = "\n".join(
        _strings([raw.get(k) for k in ("title", "description", "inputSchema", "outputSchema")])
    )
    checks = (
        (_TAGS, "unicode tag characters"),
        (_ZERO_WIDTH, "zero-width characters"),
        (_BIDI, "bidi controls"),
        (_BLOCK, "<IMPORTANT>-style block"),
        (_READS, "mentions files or credentials"),
        (_CALLS, "instructs calling other tools or hiding from the user"),
    )
    return sorted(label for pattern, label in checks if pattern.search(text))


_PROSE_KEYS = frozenset({"description", "title"})


def strip_invisible(value: Any) -> Any:
    """``value`` without tag, zero-width and bidi characters in its prose.

    A string is stripped; in a JSON schema only ``description`` and ``title`` texts are
    (property names, enums and defaults must still match what the server expects).
    """
    if isinstance(value, str):
        return _INVISIBLE.sub("", value)
    if isinstance(value, Mapping):
        return {
            k: strip_invisible(v) if k in _PROSE_KEYS and isinstance(v, str) else _strip_nested(v)
            for k, v in value.items()
        }
    return _strip_nested(value)


def _strip_nested(value: Any) -> Any:
    if isinstance(value, Mapping):
        return strip_invisible(value)
    if isinstance(value, list):
        return [_strip_nested(v) for v in value]
    return value


escape_invisible = shown  # the one display escape (pegboard.core.redact.shown)

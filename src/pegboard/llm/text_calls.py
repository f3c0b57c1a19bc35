"""Tool calls a model wrote as text instead of in the API's ``tool_calls``.

Many small instruct models served by llama.cpp, Ollama or vLLM answer a tool request with
text: a fenced block (```json {"name": ..., "arguments": {...}} ```), a bare JSON object,
Hermes/Qwen ``<tool_call>...</tool_call>`` tags, a JSON list of such objects, several of them
in one message, often beside prose. :func:`extract_text_calls` finds every JSON object of the
shape ``{"name": <an offered tool>, "arguments" | "parameters": {...} or "<json>"}`` and
returns them as :class:`~pegboard.formats.calls.ToolCall`, with the prose that is left.

Only names of offered tools count, so a JSON example in an answer about some other thing is
never run. The arguments are taken as written (a JSON string is parsed like a provider's;
what does not parse is left to repair), and each call then goes through the dispatcher like a
native one: validation, repair, approval, audit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from pegboard.formats.calls import ToolCall

_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_OPENING = re.compile(r"[\[{]")
_TAGGED = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


@dataclass(frozen=True, slots=True)
class TextCalls:
    """What :func:`extract_text_calls` found: the ``calls`` and the ``text`` left around them."""

    calls: tuple[ToolCall, ...]
    text: str


def extract_text_calls(text: str, offered: Collection[str], *, id_prefix: str) -> TextCalls:
    """The tool calls written in ``text`` whose name is one of ``offered``.

    ``id_prefix`` makes the calls' ids (``<prefix>_1``, ``<prefix>_2``, ...): they must be
    unique in the conversation. Without a call, ``text`` comes back unchanged.
    """
    spans: list[tuple[int, int]] = []
    found: list[tuple[int, list[tuple[str, Any]]]] = []
    for start, end, value in _json_values(text):
        calls = _as_calls(value, offered)
        if calls:
            spans.append((start, end))
            found.append((start, calls))
    for start, end, value in _tagged_values(text, spans):
        calls = _as_calls(value, offered)
        if calls:
            spans.append((start, end))
            found.append((start, calls))
    if not found:
        return TextCalls((), text)
    in_order = [call for _, calls in sorted(found, key=_first) for call in calls]
    parsed = tuple(
        ToolCall.parse(f"{id_prefix}_{n}", name, arguments)
        for n, (name, arguments) in enumerate(in_order, 1)
    )
    return TextCalls(parsed, _prose_left(text, sorted(spans)))


def _first(item: tuple[int, Any]) -> int:
    return item[0]


def _json_values(text: str) -> Iterator[tuple[int, int, Any]]:
    """Every top-level JSON object or array in ``text``, with its span."""
    decoder = json.JSONDecoder()
    i = 0
    while True:
        match = _OPENING.search(text, i)
        if match is None:
            return
        start = match.start()
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            i = start + 1
            continue
        yield start, end, value
        i = end


def _tagged_values(text: str, taken: list[tuple[int, int]]) -> Iterator[tuple[int, int, Any]]:
    """What small models write inside ``<tool_call>`` tags that is not strict JSON (single
    quotes, a trailing comma, a missing brace), read by a tolerant parser."""
    for match in _TAGGED.finditer(text):
        start, end = match.span(1)
        if any(a < end and start < b for a, b in taken):
            continue
        try:
            import json_repair
        except ImportError:  # the llm extra is missing: strict JSON only
            return
        try:
            value = json_repair.loads(match.group(1))
        except (ValueError, RecursionError):
            continue
        yield start, end, value


def _as_calls(value: Any, offered: Collection[str]) -> list[tuple[str, Any]]:
    """``value`` read as one call or a list of calls; [] unless every one names an offered
    tool (a list mixing calls and other data is data)."""
    items = value if isinstance(value, list) else [value]
    calls = [call for item in items if (call := _as_call(item, offered)) is not None]
    return calls if calls and len(calls) == len(items) else []


def _as_call(item: Any, offered: Collection[str]) -> tuple[str, Any] | None:
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):  # {"type": "function", "function": {...}}
        item = item["function"]
    name = item.get("name")
    if not isinstance(name, str) or name not in offered:
        return None
    keys = [key for key in _ARGUMENT_KEYS if key in item]
    if set(item) - {"name", "type", "id", *keys} or len(keys) > 1:
        return None  # more than a call: some other object that happens to have a name
    return name, item[keys[0]] if keys else None


def _prose_left(text: str, spans: list[tuple[int, int]]) -> str:
    pieces, last = [], 0
    for start, end in spans:
        pieces.append(text[last:start])
        pieces.append("\0")  # where a call was: its wrapping markup goes with it
        last = end
    pieces.append(text[last:])
    joined = "".join(pieces)
    joined = re.sub(r"<tool_call>\s*\0\s*</tool_call>", "\0", joined)
    joined = re.sub(r"```[a-zA-Z_]*[ \t]*\n?\s*\0\s*```", "\0", joined)
    joined = re.sub(r"[ \t]+\0[ \t]+", " ", joined)  # a call inside a sentence
    lines = [line.rstrip() for line in joined.replace("\0", "").splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()

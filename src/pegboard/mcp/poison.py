"""Poisoning flags: hidden-instruction markers in tool descriptions and schemas.

:func:`poison_flags` names what looks like a tool-poisoning attempt (Invariant Labs, Apr 2025):
Unicode tag characters (U+E0000-E007F), zero-width and bidi controls, ``<IMPORTANT>``-style
blocks, and instructions to read files or credentials or to call other tools. A tool that
reads files or handles a password says so in words that are not flagged: places where secrets
live (``~/.ssh``, ``.env``, ``mcp.json``) always are; reading a file only when the file is
named by a path or its contents are to be passed on; a kind of secret (API key, password) when
its sentence asks for one to be read or passed on and does not warn against it. It is a
heuristic shown to people (``servers status``, ``tools inspect``); a flag never approves or
hides anything. :func:`strip_invisible` removes the invisible characters from what the model
sees (applied when MCP tools become registry entries).

The checks cost about 45 us a tool (24 ms for ``servers status`` at 527 tools): the flags of
each definition checked are kept by its digest (:class:`KnownFlags`, in the data directory's
``poison-flags.bin``, written by :mod:`pegboard.deferral.kept_counts`), under a head line that
names :data:`FLAGS_VERSION`, pegboard's version and a digest of the patterns, so a change of
the checks starts from nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cache
from typing import Any

from pegboard._release import release
from pegboard.core.redact import shown
from pegboard.mcp.checked import definition_digest

# Bump when what poison_flags decides changes beyond its patterns (whose text the head holds).
FLAGS_VERSION = 1


class _Pattern:
    """A regular expression compiled on its first use: ``re.compile`` of this module's 13
    patterns was ~1% of a cache read's CPU, and a read checks nothing (the flags of a
    definition checked before are kept, :class:`KnownFlags`); only :data:`_INVISIBLE` runs
    there (:func:`strip_invisible`, compiled at import). ``pattern`` and ``flags`` are what the
    compiled pattern's are (:func:`_head` names them)."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        # What re.compile reports for a str pattern: re.UNICODE added unless ASCII is asked.
        self.flags = int(flags if flags & re.ASCII else flags | re.UNICODE)
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().search(text, pos, endpos)

    def finditer(
        self, text: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        return self.compiled().finditer(text, pos, endpos)


_TAGS = _Pattern("[\U000e0000-\U000e007f]")
_ZERO_WIDTH = _Pattern("[\u200b-\u200d\u2060-\u2064\ufeff\u180e\u00ad]")
_BIDI = _Pattern("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
# Compiled now: every read strips the invisible characters of the tools it syncs.
_INVISIBLE = re.compile(f"{_TAGS.pattern}|{_ZERO_WIDTH.pattern}|{_BIDI.pattern}")
_BLOCK = _Pattern(
    r"<\s*/?\s*(important|system|instructions?|secret|hidden|admin|assistant)\b[^>]*>", re.I
)
# Where secrets live: flagged wherever they are named.
_SECRET_PLACES = _Pattern(r"(~/\.|\.ssh|id_rsa|\.env\b|\.aws|/etc/passwd|mcp\.json|\.cursor)", re.I)
# Secrets by kind are named by tools that handle them (a workbook's protection password, a
# warning to keep API keys out of a query): flagged when their sentence asks for one to be
# read, fetched or passed on, unless it warns against exactly that.
_SECRET_WORDS = _Pattern(r"\b(?:credentials?|api[_ -]?keys?|passwords?|private keys?)\b", re.I)
_TAKES = _Pattern(
    r"\b(?:read|cat|open|get|fetch|retrieve|collect|extract|find|look\s+up|copy|pass|send|"
    r"include|put|append|attach|add|embed|forward|upload|paste|post|submit|provide|share|leak|"
    r"exfiltrate|print|output|return|echo|insert)(?:s|es|d|ed|ing)?\b"
    r"|\b(?:as|in|into|to)\s+(?:the\s+)?[`'\"]\w+[`'\"]",
    re.I,
)
_WARNS = _Pattern(
    r"\b(?:do not|don'?t|never|must not|should not|avoid)\s+(?:ever\s+)?"
    r"(?:includ|send|shar|pass|put|past|enter|expos|log|stor|reveal|leak|disclos|provid|submit)"
    r"\w*\b",
    re.I,
)
# After the warning: words that turn it into an instruction after all.
_UNWARNS = _Pattern(r"\b(?:but|then|instead|however|except|unless)\b", re.I)
_SENTENCE_END = _Pattern(r"[.!?](?=\s)|\n")
# Reading files is what many tools do ("Read File", "Read the contents of a file"): an
# instruction to read one names the file (a path) or has its contents passed on, in the same
# sentence (a dot inside a path or a file name does not end it).
_SENTENCE = r"(?:[^.!?\n]|[.!?](?=[^\s]))"
_READ_FILE = _Pattern(
    r"\bread\s+(?:the\s+|any\s+|every\s+|all\s+|each\s+)?(?:contents?\s+of\s+(?:the\s+)?)?"
    r"files?\b(?:[ \t]+(?:at|named|called|in|from))?[ \t]*[`'\"(]?[ \t]*"
    r"(?:~|/|\.\.?/|[a-z]:\\|\$home)"
    rf"|\bread\b{_SENTENCE}{{0,60}}\bfiles?\b{_SENTENCE}{{0,120}}"
    r"\b(?:pass|send|include|put|append|attach|forward|upload|paste|embed)\b",
    re.I,
)
_CALLS = _Pattern(
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


def _names_secrets(text: str) -> bool:
    """Names a place of secrets, or asks for a kind of secret outside a warning not to."""
    if _SECRET_PLACES.search(text):
        return True
    for word in _SECRET_WORDS.finditer(text):
        starts = [end.end() for end in _SENTENCE_END.finditer(text, 0, word.start())]
        start = starts[-1] if starts else 0
        after = _SENTENCE_END.search(text, word.end())
        end = after.start() if after else len(text)
        if not _TAKES.search(text, start, end):
            continue
        warning = _WARNS.search(text, start, word.start())  # the warning comes first
        if warning is None or _UNWARNS.search(text, warning.end(), end):
            return True
    return False


LABELS = (
    "unicode tag characters",
    "zero-width characters",
    "bidi controls",
    "<IMPORTANT>-style block",
    "mentions files or credentials",
    "instructs calling other tools or hiding from the user",
)


def poison_flags(raw: Mapping[str, Any]) -> list[str]:
    """Flags of one MCP tool definition (its description, title, schemas), sorted."""
    text = "\n".join(
        _strings([raw.get(k) for k in ("title", "description", "inputSchema", "outputSchema")])
    )
    tags, zero_width, bidi, block, secrets, calls = LABELS
    checks = (
        (_TAGS.search, tags),
        (_ZERO_WIDTH.search, zero_width),
        (_BIDI.search, bidi),
        (_BLOCK.search, block),
        (_names_secrets, secrets),
        (_READ_FILE.search, secrets),
        (_CALLS.search, calls),
    )
    return sorted({label for found, label in checks if found(text)})


class KnownFlags:
    """The flags of definitions checked before, by digest (thread-safe; a kept table of
    :mod:`pegboard.deferral.kept_counts`: each record's count is the flags' bits in
    :data:`LABELS`)."""

    def __init__(self) -> None:
        self._known: dict[bytes, int] = {}
        self._lock = threading.Lock()
        self.on_new: Callable[[], None] | None = None

    @property
    def kept_head(self) -> bytes:
        return _head()

    def flags(self, raw: Mapping[str, Any]) -> list[str]:
        """:func:`poison_flags` of ``raw``, checked only if its digest is not known."""
        digest = definition_digest(raw, "poison-flags")
        if digest is None:
            return poison_flags(raw)
        with self._lock:
            bits = self._known.get(digest)
        if bits is not None:
            return sorted(label for i, label in enumerate(LABELS) if bits >> i & 1)
        found = poison_flags(raw)
        with self._lock:
            self._known[digest] = sum(1 << LABELS.index(label) for label in found)
        if self.on_new is not None:
            self.on_new()
        return found

    def seed(self, counts: Iterable[tuple[bytes, int]]) -> None:
        with self._lock:
            self._known.update(counts)

    def counts(self) -> list[tuple[bytes, int]]:
        with self._lock:
            return list(self._known.items())


_default = KnownFlags()


def default_known() -> KnownFlags:
    """The process's table of checked definitions (seeded by the runtime)."""
    return _default


@cache
def _head() -> bytes:
    patterns = hashlib.sha256()
    for pattern in (
        _TAGS,
        _ZERO_WIDTH,
        _BIDI,
        _BLOCK,
        _SECRET_PLACES,
        _SECRET_WORDS,
        _TAKES,
        _WARNS,
        _UNWARNS,
        _SENTENCE_END,
        _READ_FILE,
        _CALLS,
    ):
        patterns.update(f"{pattern.pattern}\0{pattern.flags}\0".encode())
    version = release("pegboard")
    return f"pegboard-poison-flags {FLAGS_VERSION} {version} {patterns.hexdigest()[:16]}\n".encode()


class ToolFlags(Mapping[str, list[str]]):
    """The flags of a server's tools (:func:`poison_flags`) by name, flagged tools only; a
    tool is checked when it is first asked for (``tools inspect`` shows one tool's), every
    tool when the mapping is iterated (``servers status``)."""

    def __init__(self, tools: Sequence[Mapping[str, Any]], known: KnownFlags | None = None) -> None:
        self._tools = tools  # raw definitions, one per name
        self._known = known
        self._by_name: dict[str, Mapping[str, Any]] | None = None
        self._checked: dict[str, list[str]] = {}  # name -> its flags (empty: none)
        self._flagged: dict[str, list[str]] | None = None

    def _check(self, name: str) -> list[str]:
        found = self._checked.get(name)
        if found is None:
            if self._by_name is None:
                self._by_name = {raw["name"]: raw for raw in self._tools}
            raw = self._by_name.get(name)
            known = _default if self._known is None else self._known
            found = self._checked[name] = known.flags(raw) if raw is not None else []
        return found

    def _every(self) -> dict[str, list[str]]:
        if self._flagged is None:
            names = [raw["name"] for raw in self._tools]
            self._flagged = {name: f for name in names if (f := self._check(name))}
        return self._flagged

    def __getitem__(self, name: str) -> list[str]:
        found = self._check(name) if isinstance(name, str) else []
        if not found:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._every())

    def __len__(self) -> int:
        return len(self._every())


_PROSE_KEYS = frozenset({"description", "title"})


def has_invisible(text: str) -> bool:
    """Whether ``text`` holds a tag, zero-width or bidi character (what
    :func:`strip_invisible` removes); of a value's JSON text (UTF-8 kept, as
    :func:`~pegboard.core.definition.canonical_json` writes it), whether any string in it does.
    """
    return _INVISIBLE.search(text) is not None


def strip_invisible(value: Any) -> Any:
    """``value`` without tag, zero-width and bidi characters in its prose.

    A string is stripped; in a JSON schema only ``description`` and ``title`` texts are
    (property names, enums and defaults must still match what the server expects). What has
    nothing to strip is ``value`` itself, not a copy: the registry's tools share the catalog's
    definitions (one copy of every schema in the process) unless a server hid something.
    A schema whose JSON text has no invisible character at all (nearly every one) is not
    walked: one scan of that text decides.
    """
    if isinstance(value, str):
        return _INVISIBLE.sub("", value)
    if isinstance(value, Mapping | list):
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            text = None  # not plain JSON: walked
        if text is not None and not _INVISIBLE.search(text):
            return value
    return _strip(value)


def _strip(value: Any) -> Any:
    if isinstance(value, Mapping):
        stripped = {
            k: _INVISIBLE.sub("", v) if k in _PROSE_KEYS and isinstance(v, str) else _strip(v)
            for k, v in value.items()
        }
        if all(stripped[k] is v for k, v in value.items()):
            return value
        return stripped
    if isinstance(value, list):
        items = [_strip(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


escape_invisible = shown  # the one display escape (pegboard.core.redact.shown)

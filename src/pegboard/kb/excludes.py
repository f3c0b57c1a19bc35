"""Exclude patterns of a knowledge base: which files under a folder ``kb add`` leaves out.

A pattern is a shell glob (:mod:`fnmatch`: ``*``, ``?``, ``[...]``; ``*`` also crosses ``/``)
matched against a file's path relative to the folder given to ``kb add``. Without a ``/`` it
matches any single part of that path too, so ``_sources`` leaves out every folder of that name
and ``*.txt`` every text file; with one it matches from the folder down (``library/_sources``,
``drafts/*.md``). A folder that matches is not walked at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase

from pegboard.errors import KnowledgeBaseError

MAX_PATTERNS = 64
MAX_PATTERN_CHARS = 200


def check_patterns(patterns: Iterable[str]) -> tuple[str, ...]:
    """``patterns`` without duplicates, each stripped of a trailing ``/``; a bad one raises."""
    kept: dict[str, None] = {}
    for raw in patterns:
        pattern = raw.strip().removeprefix("./").rstrip("/")
        if not pattern or "\0" in pattern or len(pattern) > MAX_PATTERN_CHARS:
            raise KnowledgeBaseError(
                f"invalid exclude pattern {raw!r}: give a glob of up to {MAX_PATTERN_CHARS} "
                "characters such as '_sources' or '*.txt'"
            )
        if pattern.startswith("/"):
            raise KnowledgeBaseError(
                f"invalid exclude pattern {raw!r}: patterns are relative to the folder added "
                f"(write {pattern.lstrip('/')!r})"
            )
        kept[pattern] = None
    if len(kept) > MAX_PATTERNS:
        raise KnowledgeBaseError(f"too many exclude patterns ({len(kept)}; at most {MAX_PATTERNS})")
    return tuple(kept)


def excluded(relative: str, patterns: Sequence[str]) -> bool:
    """Whether the path ``relative`` (``/``-separated, under the folder added) is left out."""
    if not patterns:
        return False
    parts = relative.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        if "/" in pattern:
            if any(fnmatchcase(prefix, pattern) for prefix in prefixes):
                return True
        elif any(fnmatchcase(part, pattern) for part in parts):
            return True
    return False

"""Counted nouns in messages: ``1 tool``, ``2 tools``, never ``1 tools`` or ``tool(s)``."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``count`` and ``noun``, pluralised (``many``, else ``noun + "s"``) unless it is 1."""
    return f"{count} {noun if count == 1 else (many or noun + 's')}"

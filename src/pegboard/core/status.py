"""The state of the server behind a namespace, as tools and prompts show it to the model."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NamespaceStatus:
    """The state of the MCP server behind a namespace, as shown to the model."""

    label: str
    state: str  # cold | connecting (never listed) | cached | connected | failed | disabled
    detail: str | None = None

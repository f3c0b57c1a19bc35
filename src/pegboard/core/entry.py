"""A registry entry: the wire name, grouping and exposure policy around a :class:`Tool`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, TypeAlias

from pegboard.core.definition import ToolDefinition
from pegboard.core.scope import ToolApplyScope
from pegboard.core.tool import Tool
from pegboard.errors import UserError

DeferPolicy: TypeAlias = Literal["never", "always", "auto"]
AppliesPredicate: TypeAlias = Callable[[ToolApplyScope], bool]


@dataclass(frozen=True, slots=True)
class ToolSource:
    """Where an MCP tool comes from: the identity its wire name was derived from."""

    server_id: str
    tool_name: str


@dataclass(frozen=True)
class ToolEntry:
    """One tool as the registry knows it.

    ``name`` is the wire name the model emits; ``namespace`` groups tools for search
    (``web``, ``kb``, ``mcp:<server_id>``, ``meta`` or a user's own) and ``namespace_label`` is
    what the model is shown (``mcp:Gmail``), defaulting to the namespace.
    """

    name: str
    namespace: str
    tool: Tool
    description: str = ""
    defer: DeferPolicy = "auto"
    namespace_label: str | None = None
    applies: AppliesPredicate | None = None
    source: ToolSource | None = None

    @classmethod
    def of(cls, tool: Tool) -> ToolEntry:
        """The entry of a tool that carries its own name and namespace
        (``Tool.from_function(fn, namespace="math")``)."""
        if not tool.name or not tool.namespace:
            missing = "a namespace" if tool.name else "a name"
            raise UserError(
                f"tool {tool.name or tool.description[:40]!r} has no {missing[2:]}: give it one "
                '(Tool.from_function(fn, namespace="math")) or register a '
                "ToolEntry(name, namespace, tool)"
            )
        return cls(tool.name, tool.namespace, tool)

    @property
    def label(self) -> str:
        return self.namespace_label or self.namespace

    @property
    def summary(self) -> str:
        """The one-line description shown in search results."""
        text = self.description or self.tool.description
        return text.strip().splitlines()[0].strip() if text.strip() else ""

    @cached_property
    def definition(self) -> ToolDefinition:
        """The model-facing definition (wire name, description, schemas, annotations)."""
        return self.tool.definition(self.name)

    @property
    def definition_hash(self) -> str:
        return self.definition.hash

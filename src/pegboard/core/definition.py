"""The model-facing definition of a tool: frozen, hashable, apart from its execution."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

# Built once: json.dumps with any keyword builds an encoder per call (~1-2 us of a proxied
# call's each); an encoder keeps no state between calls.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
)
_WIRE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces, UTF-8 kept) for hashing and token counts."""
    return _CANONICAL.encode(value)


def wire_json(value: Any) -> str:
    """Compact JSON as MCP messages carry it (no spaces, UTF-8 kept, keys in their order):
    ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)``, so
    ``ValueError`` for NaN or infinity, ``TypeError`` for what JSON has no form for."""
    return _WIRE.encode(value)


@dataclass(frozen=True, eq=False)
class ToolDefinition:
    """What a model is told about one tool: name, description, schemas, annotations, strict.

    Equal definitions have equal :attr:`hash` (every field counts, annotations included: a
    server that flips ``destructiveHint`` changes the definition, and so voids approvals
    bound to the old one).
    """

    name: str
    description: str
    input_schema: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    strict: bool | None = None
    title: str | None = None

    @cached_property
    def hash(self) -> str:
        """Stable sha256 over every field."""
        payload = canonical_json(
            {
                "name": self.name,
                "description": self.description,
                "input_schema": self.input_schema,
                "output_schema": self.output_schema,
                "annotations": self.annotations,
                "strict": self.strict,
                "title": self.title,
            }
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def stub(self) -> str:
        """The JSDoc signature stub ``tool_inspect`` shows (see :mod:`pegboard.core.stub`)."""
        from pegboard.core.stub import render_stub

        return render_stub(self)

    @property
    def token_text(self) -> str:
        """The text this definition is counted as (see :mod:`pegboard.core.tokens`): name,
        description and schema JSON; name and description alone if the schema cannot be
        serialised. Made when asked, not kept: the counter remembers each entry's count, and
        a kept copy of every schema's JSON would be 0.5 KB per tool for the process's life."""
        try:
            schema_json = canonical_json(self.input_schema)
        except (TypeError, ValueError, RecursionError):
            return f"{self.name}\n{self.description}"
        return f"{self.name}\n{self.description}\n{schema_json}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolDefinition) and other.hash == self.hash

    def __hash__(self) -> int:
        return hash(self.hash)

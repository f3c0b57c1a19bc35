"""The searchable text of a tool entry, split into weighted fields."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pegboard.core.entry import ToolEntry
from pegboard.core.names import strip_mcp_namespace

FIELDS = ("name", "label", "description", "params", "param_docs")
# What the embedding models read: parameter descriptions are long and generic ("the path of
# the file", "maximum number of results") and blur a mean of word vectors; dropping them
# from the embedded text (BM25F still indexes them) lifted livemcpbench hit@5 by two queries
# alone and five pooled, and changed no other dataset by more than 0.1 point.
EMBEDDED_FIELDS = ("name", "label", "description", "params")

# Nested schemas are walked to this depth: deep enough for ``options.filter.field`` and shallow
# enough that a huge schema cannot swamp its tool's description.
_MAX_DEPTH = 3


@dataclass(frozen=True, slots=True)
class ToolDocument:
    """The raw text of each field of one entry."""

    name: str
    namespace: str
    label: str
    fields: Mapping[str, str]

    @property
    def text(self) -> str:
        """The text the embedding models read (:data:`EMBEDDED_FIELDS`, in order)."""
        return " ".join(self.fields[f] for f in EMBEDDED_FIELDS if self.fields[f])


def _properties(schema: Any, depth: int = 0) -> Iterator[tuple[str, str]]:
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for key, sub in props.items():
            doc = sub.get("description", "") if isinstance(sub, Mapping) else ""
            yield str(key), doc if isinstance(doc, str) else ""
            yield from _properties(sub, depth + 1)
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _properties(items, depth + 1)


def _display_name(entry: ToolEntry) -> str:
    # An MCP wire name (``mcp__server__tool__hash``) is noise around the tool's own name.
    if entry.source is not None:
        return entry.source.tool_name
    return entry.name


def document_for(entry: ToolEntry) -> ToolDocument:
    params = list(_properties(entry.tool.input_schema))
    description = entry.tool.description or entry.description
    labels = {strip_mcp_namespace(entry.namespace), strip_mcp_namespace(entry.label)}
    return ToolDocument(
        name=entry.name,
        namespace=entry.namespace,
        label=entry.label,
        fields={
            "name": _display_name(entry),
            "label": " ".join(sorted(labels)),
            "description": description,
            "params": " ".join(key for key, _ in params),
            "param_docs": " ".join(doc for _, doc in params if doc),
        },
    )

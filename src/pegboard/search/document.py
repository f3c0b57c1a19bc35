"""The searchable text of a tool entry, split into weighted fields."""

from __future__ import annotations

from collections.abc import Mapping
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


def _is_mapping(value: Any) -> bool:
    # A schema read from JSON is made of dicts: ``type(...) is dict`` first spares the ABC check.
    return type(value) is dict or isinstance(value, Mapping)


def _properties(schema: Any, found: list[tuple[str, str]], depth: int = 0) -> None:
    """Append each property's name and description to ``found``, depth first (a list, not a
    generator: the index key builds the document of every tool at each ``tools search``)."""
    if depth > _MAX_DEPTH or not _is_mapping(schema):
        return
    props = schema.get("properties")
    if _is_mapping(props):
        for key, sub in props.items():
            doc = sub.get("description", "") if _is_mapping(sub) else ""
            found.append((str(key), doc if isinstance(doc, str) else ""))
            _properties(sub, found, depth + 1)
    items = schema.get("items")
    if _is_mapping(items):
        _properties(items, found, depth + 1)


def _display_name(entry: ToolEntry) -> str:
    # An MCP wire name (``mcp__server__tool__hash``) is noise around the tool's own name.
    if entry.source is not None:
        return entry.source.tool_name
    return entry.name


def document_for(entry: ToolEntry) -> ToolDocument:
    params: list[tuple[str, str]] = []
    _properties(entry.tool.input_schema, params)
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

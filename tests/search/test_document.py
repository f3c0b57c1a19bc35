"""The searchable text of an entry: each field's words, nested schemas walked in order."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from pegboard.core.entry import ToolEntry
from pegboard.core.tool import Tool
from pegboard.search.document import document_for

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "the file to read"},
        "options": {
            "type": "object",
            "properties": {
                "filter": {
                    "type": "array",
                    "items": {"properties": {"field": {"description": "column name"}}},
                },
                "limit": {"type": "integer"},
            },
        },
        "mode": "not a schema",
    },
}


class _Frozen(Mapping[str, Any]):
    """A read-only mapping that is no dict (a schema kept as another Mapping type)."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = {k: _frozen(v) for k, v in data.items()}

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def _frozen(value: Any) -> Any:
    return _Frozen(value) if isinstance(value, dict) else value


def _fields(schema: Mapping[str, Any]) -> dict[str, str]:
    entry = ToolEntry("read", "files", Tool(description="Read a file", input_schema=schema))
    return dict(document_for(entry).fields)


def test_nested_properties_are_walked_depth_first_with_their_descriptions() -> None:
    fields = _fields(SCHEMA)
    assert fields["params"] == "path options filter field limit mode"
    assert fields["param_docs"] == "the file to read column name"


def test_a_schema_of_other_mapping_types_gives_the_same_document_as_its_dicts() -> None:
    # Dicts take a fast path past the Mapping check; any other Mapping is walked the same.
    assert _fields(_frozen(SCHEMA)) == _fields(SCHEMA)
    assert _fields(MappingProxyType(SCHEMA)) == _fields(SCHEMA)

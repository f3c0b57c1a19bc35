from typing import Any

import pytest

from pegboard.core.schema import validate_arguments
from pegboard.core.tool import Tool
from pegboard.errors import SchemaError
from pegboard.formats.strict import (
    anthropic_strict_schema,
    openai_strict_schema,
    relax_strict_arguments,
)

SEARCH: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "description": "Words"},
        "limit": {"type": "integer", "default": 10, "minimum": 1},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "filter": {
            "type": "object",
            "properties": {"since": {"type": "string", "format": "date"}},
        },
    },
    "required": ["query"],
}


def test_openai_strict_closes_objects_requires_everything_and_makes_optionals_nullable() -> None:
    assert openai_strict_schema(SEARCH) == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words (minLength: 1)"},
            "limit": {"type": ["integer", "null"], "minimum": 1},
            "unit": {"anyOf": [{"type": "string", "enum": ["c", "f"]}, {"type": "null"}]},
            "filter": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {"since": {"type": ["string", "null"], "format": "date"}},
                        "additionalProperties": False,
                        "required": ["since"],
                    },
                    {"type": "null"},
                ]
            },
        },
        "additionalProperties": False,
        "required": ["query", "limit", "unit", "filter"],
    }


def test_anthropic_strict_keeps_optionals_and_moves_numeric_bounds_into_descriptions() -> None:
    assert anthropic_strict_schema(SEARCH) == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words (minLength: 1)"},
            "limit": {"type": "integer", "description": "(minimum: 1)"},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "filter": {
                "type": "object",
                "properties": {"since": {"type": "string", "format": "date"}},
                "additionalProperties": False,
                "required": [],
            },
        },
        "additionalProperties": False,
        "required": ["query"],
    }


def test_anthropic_accepts_min_items_up_to_one() -> None:
    schema = {
        "type": "object",
        "properties": {
            "one": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "two": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 5},
        },
    }
    assert anthropic_strict_schema(schema)["properties"] == {
        "one": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "two": {
            "type": "array",
            "items": {"type": "string"},
            "description": "(minItems: 2, maxItems: 5)",
        },
    }
    assert openai_strict_schema(schema)["properties"]["two"] == {
        "anyOf": [
            {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 5},
            {"type": "null"},
        ]
    }


def test_formats_the_provider_does_not_know_become_description_text() -> None:
    schema = {
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date"},
            "site": {"type": "string", "format": "uri", "description": "Site"},
        },
        "required": ["when", "site"],
    }
    assert openai_strict_schema(schema)["properties"] == {
        "when": {"type": "string", "format": "date"},
        "site": {"type": "string", "description": 'Site (format: "uri")'},
    }
    assert anthropic_strict_schema(schema)["properties"] == schema["properties"]


def test_the_input_schema_is_not_mutated() -> None:
    before = repr(SEARCH)
    openai_strict_schema(SEARCH)
    anthropic_strict_schema(SEARCH)
    assert repr(SEARCH) == before


def test_defs_are_rewritten_and_refs_kept() -> None:
    schema = {
        "type": "object",
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "properties": {"p": {"$ref": "#/$defs/P"}},
        "required": ["p"],
    }
    assert openai_strict_schema(schema) == {
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/P"}},
        "required": ["p"],
        "additionalProperties": False,
        "$defs": {
            "P": {
                "type": "object",
                "properties": {"x": {"type": ["integer", "null"]}},
                "additionalProperties": False,
                "required": ["x"],
            }
        },
    }


def test_optional_type_lists_gain_null_once() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": ["string", "integer"]},
            "b": {"type": ["string", "null"]},
            "c": {"type": "null"},
        },
    }
    assert openai_strict_schema(schema)["properties"] == {
        "a": {"type": ["string", "integer", "null"]},
        "b": {"type": ["string", "null"]},
        "c": {"type": "null"},
    }


def test_a_ref_with_siblings_is_inlined_with_the_siblings_winning() -> None:
    schema = {
        "type": "object",
        "$defs": {"Unit": {"type": "string", "enum": ["c", "f"], "description": "Unit"}},
        "properties": {"u": {"$ref": "#/$defs/Unit", "description": "Temperature unit"}},
        "required": ["u"],
    }
    assert anthropic_strict_schema(schema)["properties"] == {
        "u": {"type": "string", "enum": ["c", "f"], "description": "Temperature unit"}
    }
    with pytest.raises(SchemaError, match=r"the reference #/\$defs/Nope does not resolve"):
        openai_strict_schema(
            {"type": "object", "properties": {"u": {"$ref": "#/$defs/Nope", "title": "U"}}}
        )


def test_an_object_behind_a_single_allof_keeps_its_required_list() -> None:
    schema = {
        "type": "object",
        "properties": {
            "p": {
                "allOf": [
                    {
                        "type": "object",
                        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                        "required": ["a"],
                    }
                ],
                "description": "P",
            }
        },
        "required": ["p"],
    }
    assert anthropic_strict_schema(schema)["properties"]["p"] == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
        "description": "P",
    }


def test_single_allof_is_inlined_and_oneof_becomes_anyof() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"allOf": [{"type": "string"}], "description": "A"},
            "b": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["a", "b"],
    }
    assert openai_strict_schema(schema)["properties"] == {
        "a": {"type": "string", "description": "A"},
        "b": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    }


@pytest.mark.parametrize(
    ("prop", "problem"),
    [
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "free-form keys"),
        ({}, "an any-value schema cannot be constrained; give it a type"),
        ({"description": "anything"}, "a schema without a type cannot be constrained"),
        ({"type": "string", "not": {"const": "x"}}, 'the "not" keyword is not supported'),
        ({"type": "array", "prefixItems": [{"type": "string"}]}, '"prefixItems" keyword'),
        ({"allOf": [{"type": "string"}, {"minLength": 2}]}, '"allOf" with more than one'),
    ],
)
def test_shapes_strict_mode_cannot_express_are_refused_with_the_path(
    prop: dict[str, Any], problem: str
) -> None:
    schema = {"type": "object", "properties": {"p": prop}}
    with pytest.raises(SchemaError) as info:
        openai_strict_schema(schema, tool_name="demo")
    message = str(info.value)
    assert message.startswith(
        "OpenAI strict mode cannot express the schema of tool demo at #/properties/p: "
    )
    assert problem in message
    assert message.endswith("Set strict=False on the tool, or simplify the schema.")


def test_anthropic_refuses_recursive_schemas_openai_accepts_them() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
                "required": ["next"],
            }
        },
        "properties": {"head": {"$ref": "#/$defs/Node"}},
        "required": ["head"],
    }
    assert openai_strict_schema(schema)["$defs"]["Node"]["required"] == ["next"]
    with pytest.raises(SchemaError, match="recursive schemas are not supported"):
        anthropic_strict_schema(schema, tool_name="list")


def test_root_must_be_an_object() -> None:
    with pytest.raises(SchemaError, match="at the root: the root must be an object schema"):
        openai_strict_schema({"type": "array", "items": {"type": "string"}})
    with pytest.raises(SchemaError, match="the root cannot be a union"):
        openai_strict_schema({"anyOf": [{"type": "object"}]})


def test_relax_drops_strict_nulls_of_optional_fields_so_the_original_schema_validates() -> None:
    strict_args = {"query": "x", "limit": None, "unit": None, "filter": {"since": None}}
    validate_arguments(openai_strict_schema(SEARCH), strict_args)
    relaxed = relax_strict_arguments(SEARCH, strict_args)
    assert relaxed == {"query": "x", "filter": {}}
    validate_arguments(SEARCH, relaxed)


def test_relax_keeps_nulls_the_original_schema_accepts() -> None:
    def find(query: str, page: int | None = None, size: int = 5) -> str:
        return query

    tool = Tool.from_function(find)
    relaxed = relax_strict_arguments(tool.input_schema, {"query": "q", "page": None, "size": None})
    assert relaxed == {"query": "q", "page": None}


def test_relax_descends_into_refs_optional_objects_and_arrays() -> None:
    schema = {
        "type": "object",
        "$defs": {"Item": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
            "one": {"anyOf": [{"$ref": "#/$defs/Item"}, {"type": "null"}]},
        },
    }
    args = {"items": [{"n": None}, {"n": 2}], "one": {"n": None}}
    assert relax_strict_arguments(schema, args) == {"items": [{}, {"n": 2}], "one": {}}

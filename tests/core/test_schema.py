from typing import Any

import pytest

from pegboard.core.schema import MAX_PROBLEMS, apply_defaults, check_schema, validate_arguments
from pegboard.errors import InvalidToolArguments, SchemaError

SEARCH: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "limit": {"type": "integer", "minimum": 1},
        "unit": {"enum": ["c", "f"]},
    },
    "required": ["query"],
    "additionalProperties": False,
}


def problems_of(schema: Any, args: Any) -> tuple[str, ...]:
    with pytest.raises(InvalidToolArguments) as info:
        validate_arguments(schema, args, tool_name="web_search")
    return info.value.problems


def test_valid_arguments_pass_silently() -> None:
    validate_arguments(SEARCH, {"query": "x", "limit": 3, "unit": "c"})


def test_wrong_type_names_the_field_the_expected_type_and_the_value() -> None:
    assert problems_of(SEARCH, {"query": "x", "limit": "ten"}) == (
        'limit: expected integer, got string "ten"',
    )


def test_missing_required_property_is_named() -> None:
    assert problems_of(SEARCH, {}) == ("query: required property missing",)


def test_error_message_names_the_tool_and_every_problem() -> None:
    with pytest.raises(InvalidToolArguments) as info:
        validate_arguments(SEARCH, {"limit": 0, "unit": "k", "extra": 1}, tool_name="web_search")
    assert info.value.tool_name == "web_search"
    assert str(info.value) == (
        'Invalid params for "web_search": query: required property missing; '
        "extra: unexpected property; limit: 0 is less than the minimum of 1; "
        'unit: expected one of "c", "f", got "k"'
    )


def test_arguments_that_are_not_an_object_are_reported_at_the_root() -> None:
    assert problems_of(SEARCH, ["x"]) == ("(root): expected object, got array",)


def test_nested_paths_use_dots_and_indexes() -> None:
    schema = {
        "type": "object",
        "properties": {
            "rows": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"id": {"type": "integer"}},
                    "required": ["id"],
                },
            }
        },
    }
    assert problems_of(schema, {"rows": [{"id": 1}, {"id": True}, {}]}) == (
        "rows[1].id: expected integer, got boolean true",
        "rows[2].id: required property missing",
    )


def test_problems_are_bounded_with_a_count_of_the_rest() -> None:
    schema = {
        "type": "object",
        "properties": {f"p{i}": {"type": "integer"} for i in range(8)},
    }
    problems = problems_of(schema, {f"p{i}": "x" for i in range(8)})
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[0] == 'p0: expected integer, got string "x"'
    assert problems[-1] == "... and 3 more problems"


def test_local_refs_and_defs_resolve() -> None:
    schema = {
        "type": "object",
        "$defs": {"Range": {"type": "object", "properties": {"start": {"type": "string"}}}},
        "properties": {"range": {"$ref": "#/$defs/Range"}},
    }
    validate_arguments(schema, {"range": {"start": "a"}})
    assert problems_of(schema, {"range": {"start": 1}}) == (
        "range.start: expected string, got integer 1",
    )


def test_draft07_definitions_are_honoured_via_dollar_schema() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "definitions": {"n": {"type": "number"}},
        "properties": {"n": {"$ref": "#/definitions/n"}, "t": {"items": [{"type": "string"}]}},
    }
    validate_arguments(schema, {"n": 1.5, "t": ["a", 2]})
    assert problems_of(schema, {"n": "1", "t": [3]}) == (
        'n: expected number, got string "1"',
        "t[0]: expected string, got integer 3",
    )


def test_boolean_and_empty_subschemas_are_accepted() -> None:
    schema = {"type": "object", "properties": {"any": {}, "yes": True, "no": False}}
    check_schema(schema)
    validate_arguments(schema, {"any": [1], "yes": None})
    assert problems_of(schema, {"no": [1]}) == ("no: not allowed here (got [1])",)


def test_nullable_union_is_explained_by_its_types() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
    }
    validate_arguments(schema, {"n": None})
    assert problems_of(schema, {"n": "x"}) == ('n: expected integer or null, got string "x"',)


def test_union_with_one_fitting_object_variant_reports_that_variants_problems() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "R": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
        },
        "properties": {"r": {"anyOf": [{"$ref": "#/$defs/R"}, {"type": "null"}]}},
    }
    assert problems_of(schema, {"r": {}}) == ("r.a: required property missing",)


def test_remote_refs_are_never_fetched() -> None:
    schema = {"type": "object", "properties": {"x": {"$ref": "https://example.com/x.json"}}}
    with pytest.raises(SchemaError, match=r"never fetches remote schemas\. Inline it"):
        validate_arguments(schema, {"x": 1}, tool_name="t")


def test_check_schema_rejects_non_object_schemas() -> None:
    with pytest.raises(SchemaError, match=r'its type is "string"\. Wrap the value'):
        check_schema({"type": "string"})
    with pytest.raises(SchemaError, match=r"must be a JSON object, got array"):
        check_schema([])  # type: ignore[arg-type]


def test_check_schema_names_the_malformed_keyword() -> None:
    with pytest.raises(SchemaError) as info:
        check_schema({"type": "object", "properties": {"a": {"type": "strin"}}})
    assert str(info.value).startswith("Invalid JSON Schema at properties.a.type: ")


def test_check_schema_accepts_a_schema_without_type() -> None:
    check_schema({"properties": {"a": {"type": "string"}}})
    check_schema({})


def test_invalid_schema_in_validate_raises_schema_error() -> None:
    with pytest.raises(SchemaError):
        validate_arguments({"type": "object", "required": "a"}, {})


def test_a_huge_invalid_array_is_cut_short() -> None:
    schema = {
        "type": "object",
        "properties": {"ids": {"type": "array", "items": {"type": "integer"}}},
    }
    problems = problems_of(schema, {"ids": ["x"] * 10_000})
    assert problems == (
        'ids[0]: expected integer, got string "x"',
        'ids[1]: expected integer, got string "x"',
        'ids[2]: expected integer, got string "x"',
        'ids[3]: expected integer, got string "x"',
        'ids[4]: expected integer, got string "x"',
        "... and more problems",
    )


DEFAULTED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "limit": {"type": "integer", "default": 10},
        "tags": {"type": "array", "items": {"type": "string"}, "default": ["a"]},
        "unit": {"type": ["string", "null"], "default": "c"},
        "nested": {
            "type": "object",
            "properties": {"depth": {"type": "integer", "default": 2}},
            "default": {},
        },
        "linked": {"$ref": "#/$defs/n"},
        "anything": True,
    },
    "$defs": {"n": {"type": "integer", "default": 5}},
}


def test_missing_top_level_properties_get_their_schema_defaults() -> None:
    assert apply_defaults(DEFAULTED, {"query": "x"}) == {
        "query": "x",
        "limit": 10,
        "tags": ["a"],
        "unit": "c",
        "nested": {},
    }


def test_sent_values_and_nulls_are_kept_and_the_input_is_not_mutated() -> None:
    args = {"query": "x", "limit": 3, "unit": None, "tags": []}
    filled = apply_defaults(DEFAULTED, args)
    assert filled == {"query": "x", "limit": 3, "unit": None, "tags": [], "nested": {}}
    assert args == {"query": "x", "limit": 3, "unit": None, "tags": []}


def test_defaults_are_copies_so_a_tool_cannot_change_the_schema() -> None:
    filled = apply_defaults(DEFAULTED, {})
    filled["tags"].append("b")
    assert DEFAULTED["properties"]["tags"]["default"] == ["a"]
    assert apply_defaults(DEFAULTED, {})["tags"] == ["a"]


def test_schemas_without_properties_leave_arguments_unchanged() -> None:
    assert apply_defaults({"type": "object"}, {"a": 1}) == {"a": 1}
    assert apply_defaults({"type": "object", "properties": True}, {}) == {}

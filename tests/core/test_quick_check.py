"""The quick yes of a schema check (fastjsonschema) never lets through what jsonschema refuses."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pegboard.core.definition import canonical_json
from pegboard.core.quick_check import quick_check
from pegboard.core.schema import validate_arguments
from pegboard.errors import InvalidToolArguments
from pegboard.mcp.listing import structured_content_problem

# Schemas of the subset, the shapes tool schemas take (the SDK's and pydantic's among them).
SUBSET: list[dict[str, Any]] = [
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 0, "exclusiveMaximum": 10},
            "x": {"type": "number", "maximum": 1.5},
            "flag": {"type": "boolean", "default": False},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2},
            "mode": {"enum": ["a", "b"]},
            "kind": {"const": "k"},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "code": {"type": "string", "pattern": "^[a-z]+$"},
        },
        "additionalProperties": False,
    },
    {
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/Point", "description": "a point"}},
        "required": ["p"],
    },
    {
        "type": "object",
        "properties": {"v": {"oneOf": [{"type": "integer"}, {"type": "string", "minLength": 2}]}},
        "minProperties": 1,
        "if": {"required": ["v"]},
        "then": {"properties": {"v": {"not": {"const": "zz"}}}},
    },
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-20, 20)
    | st.floats(-3, 12, allow_nan=False)
    | st.sampled_from([1.0, 0.5, 10.0])
    | st.sampled_from(["", "a", "b", "k", "zz", "abc", "abcd", "ab\n", "A1"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["text", "n", "x", "flag", "tags", "mode", "kind", "maybe", "code"])
            | st.sampled_from(["p", "v", "other"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=8,
)


@pytest.mark.parametrize("index", range(len(SUBSET)))
@settings(max_examples=400, deadline=None)
@given(instance=json_values)
def test_a_quick_yes_is_a_yes_of_jsonschema_for_both_drafts(index: int, instance: Any) -> None:
    schema = SUBSET[index]
    quick = quick_check(canonical_json(schema))
    assert quick is not None
    if quick(instance):
        assert jsonschema.Draft202012Validator(schema).is_valid(instance)
        assert jsonschema.Draft7Validator(schema).is_valid(instance)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "number", "multipleOf": 0.1},
        {"type": "array", "uniqueItems": True},
        {"enum": [1, "a"]},  # True == 1 for Python's equality
        {"const": 0},
        {"properties": {"p": {"$ref": "#/$defs/P", "maxLength": 2}}, "$defs": {"P": {}}},
        {"$ref": "https://example.com/schema.json"},
        {"type": "string", "pattern": "^(?!.*x$).*"},  # a lookaround: $ read as \\Z widens it
        {"$id": "https://example.com/s", "type": "object"},
        {"type": "object", "dependentRequired": {"a": ["b"]}},
        {"type": "array", "prefixItems": [{"type": "string"}]},
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"},
        {"type": "object", "properties": {"a": {"unevaluatedProperties": False}}},
    ],
)
def test_schemas_outside_the_subset_have_no_quick_check(schema: dict[str, Any]) -> None:
    assert quick_check(canonical_json(schema)) is None


def test_a_lookaround_pattern_would_have_let_through_what_jsonschema_refuses() -> None:
    """Why ``(?`` keeps a pattern out: with ``$`` read as ``\\Z`` the lookahead no longer
    sees the end before a final newline, and fastjsonschema would say yes."""
    import fastjsonschema

    schema = {"type": "string", "pattern": "^(?!.*x$).*"}
    fastjsonschema.compile(schema)("ax\n")  # no exception: its yes
    assert not jsonschema.Draft202012Validator(schema).is_valid("ax\n")


def test_a_changed_schema_is_checked_by_its_own_compiled_code_not_the_old_one() -> None:
    """A tool's schema changed (a ``list_changed`` brought a new definition): the arguments
    the old schema accepted are refused by the new one, both ways, for arguments and for
    structured output."""
    before = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    after = {"type": "object", "properties": {"q": {"type": "integer"}}, "required": ["q"]}

    validate_arguments(before, {"q": "text"}, tool_name="t")
    with pytest.raises(InvalidToolArguments, match="q: expected integer"):
        validate_arguments(after, {"q": "text"}, tool_name="t")
    validate_arguments(after, {"q": 3}, tool_name="t")
    with pytest.raises(InvalidToolArguments, match="q: expected string"):
        validate_arguments(before, {"q": 3}, tool_name="t")

    assert structured_content_problem(before, {"q": "text"}) is None
    assert structured_content_problem(after, {"q": "text"}) == (
        "invalid structured content: 'text' is not of type 'integer'"
    )
    assert structured_content_problem(after, {"q": 3}) is None


@pytest.mark.parametrize(
    ("index", "instance"),
    [
        (0, {"text": "a"}),
        (1, {"n": 1.0, "x": 1, "tags": ["ab"], "mode": "a", "kind": "k", "maybe": None}),
        (1, {"code": "abc", "flag": True}),
        (2, {"p": {"x": 1}}),
        (3, {"v": 1}),
    ],
)
def test_valid_instances_of_the_subset_get_the_quick_yes(index: int, instance: Any) -> None:
    quick = quick_check(canonical_json(SUBSET[index]))
    assert quick is not None
    assert quick(instance)

"""Property: what a strict-mode model sends for a valid call relaxes back to that call."""

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pegboard.core.schema import validate_arguments
from pegboard.formats.strict import openai_strict_schema, relax_strict_arguments

NAMES = st.sampled_from(["a", "b", "c", "query", "limit", "items"])
LEAVES = st.one_of(
    st.just({"type": "string"}),
    st.just({"type": "integer"}),
    st.just({"type": "boolean"}),
    st.just({"type": "string", "enum": ["x", "y"]}),
    st.just({"anyOf": [{"type": "integer"}, {"type": "null"}]}),
)


def objects(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    props = st.dictionaries(NAMES, children, max_size=4)
    return props.flatmap(
        lambda p: st.lists(st.sampled_from(sorted(p)) if p else st.nothing(), unique=True).map(
            lambda req: {"type": "object", "properties": p, "required": req}
        )
    )


SCHEMAS = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        objects(children), children.map(lambda s: {"type": "array", "items": s})
    ),
    max_leaves=8,
)
ROOTS = objects(SCHEMAS)


def value_for(schema: dict[str, Any], data: st.DataObject) -> Any:
    """A value valid for ``schema``, omitting some optional properties."""
    if "anyOf" in schema:
        return data.draw(st.one_of(st.none(), st.integers(-5, 5)))
    if "enum" in schema:
        return data.draw(st.sampled_from(schema["enum"]))
    kind = schema["type"]
    if kind == "string":
        return data.draw(st.text(max_size=5))
    if kind == "integer":
        return data.draw(st.integers(-5, 5))
    if kind == "boolean":
        return data.draw(st.booleans())
    if kind == "array":
        return [value_for(schema["items"], data) for _ in range(data.draw(st.integers(0, 2)))]
    out = {}
    for name, sub in schema["properties"].items():
        if name in schema["required"] or data.draw(st.booleans()):
            out[name] = value_for(sub, data)
    return out


def as_strict_model_would_send(schema: dict[str, Any], value: Any) -> Any:
    """Every property present: an omitted optional one is sent as null."""
    if schema.get("type") == "array":
        return [as_strict_model_would_send(schema["items"], v) for v in value]
    if schema.get("type") != "object":
        return value
    return {
        name: as_strict_model_would_send(sub, value[name]) if name in value else None
        for name, sub in schema["properties"].items()
    }


@settings(max_examples=50, deadline=None)
@given(schema=ROOTS, data=st.data())
def test_strict_call_relaxes_back_to_the_original_call(
    schema: dict[str, Any], data: st.DataObject
) -> None:
    strict = openai_strict_schema(schema)  # validate_arguments checks it against the metaschema
    value = value_for(schema, data)
    validate_arguments(schema, value)
    sent = as_strict_model_would_send(schema, value)
    validate_arguments(strict, sent)
    relaxed = relax_strict_arguments(schema, sent)
    validate_arguments(schema, relaxed)
    assert relaxed == _without_optional_nulls(schema, value)


def _without_optional_nulls(schema: dict[str, Any], value: Any) -> Any:
    """The call itself, except that an explicit null on an optional nullable property stays."""
    if schema.get("type") == "array":
        return [_without_optional_nulls(schema["items"], v) for v in value]
    if schema.get("type") != "object":
        return value
    props = schema["properties"]
    out = {name: _without_optional_nulls(props[name], v) for name, v in value.items()}
    for name, sub in props.items():
        if name not in value and "anyOf" in sub:
            out[name] = None  # nullable: "absent" and "null" cannot be told apart
    return out

"""Attack: an upstream server's tool schema is code for the quick check. ``fastjsonschema``
turns a schema into Python source and runs it; a hostile input or output schema (a property
name that closes a string literal, a bound or type that is an expression, a pattern or enum
with quotes) would then run the upstream's code inside the gateway at the first call.

Held: no schema runs anything; a schema the generator refuses has no quick check (jsonschema
judges alone); a quick yes is never a yes jsonschema would refuse, hostile names included;
and the same holds through :func:`validate_arguments`, the path every call takes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import referencing.exceptions

from pegboard.core.definition import canonical_json
from pegboard.core.quick_check import quick_check
from pegboard.core.schema import validate_arguments
from pegboard.errors import InvalidToolArguments, SchemaError


def _schemas(marker: Path) -> dict[str, dict[str, Any]]:
    code = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    return {
        "bound as an expression": {"properties": {"a": {"type": "string", "minLength": code}}},
        "maximum as an expression": {"properties": {"a": {"maximum": code}}},
        "maxItems as an expression": {"type": "array", "maxItems": code},
        "maxProperties as an expression": {"type": "object", "maxProperties": f"1 or {code}"},
        "type as an expression": {"type": code},
        "name closing a double quote": {
            "type": "object",
            "properties": {f'x" or {code} or "': {"type": "string"}},
            "required": [f'x" or {code} or "'],
        },
        "name with backslash and quote": {
            "type": "object",
            "properties": {f'x\\": 1, {code}, "': {"type": "string"}},
            "required": ['x\\"'],
        },
        "name with newlines": {
            "type": "object",
            "properties": {f'x"\n{code}\n"': {"type": "integer"}},
        },
        "name closing a single quote": {
            "type": "object",
            "properties": {f"x' or {code} or '": {"type": "integer"}},
        },
        "required entry as an expression": {"type": "object", "required": [f'"+{code}+"']},
        "pattern with triple quotes": {"type": "string", "pattern": f"'''+{code}+'''"},
        "pattern with double triple quotes": {"type": "string", "pattern": f'"""+{code}+"""'},
        "enum with quotes": {"enum": [f'"+{code}+"', "b\\'"]},
        "const with quotes": {"const": f"'''\"\"\"{code}"},
        "title with triple quotes": {"title": f'"""{code}', "type": "string"},
        "description with a quote": {"description": f'"{code}', "type": "integer"},
        "defs name with a quote": {
            "$defs": {f"a'+{code}+'": {"type": "string"}},
            "properties": {"p": {"$ref": f"#/$defs/a'+{code}+'"}},
        },
    }


INSTANCES: list[Any] = [
    "abc",
    5,
    [1, 2, 3],
    {"a": "x"},
    {"x": 1},
    {'x" or ': 1},
    {"p": "s"},
    {"b\\'": 1},
    {},
    None,
]


@pytest.mark.parametrize("name", sorted(_schemas(Path("/nonexistent"))))
def test_a_hostile_schema_runs_nothing_and_never_widens_a_yes(name: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    schema = _schemas(marker)[name]
    check = quick_check(canonical_json(schema))
    for instance in INSTANCES:
        if check is not None and check(instance):
            assert jsonschema.Draft202012Validator(schema).is_valid(instance), (name, instance)
    assert not marker.exists(), f"{name}: the schema ran code"


def test_hostile_names_are_checked_as_names(tmp_path: Path) -> None:
    """Names that would break a generated literal are still the names checked: a required
    hostile name is required, its type enforced, through the call's own check."""
    name = 'x" or True or "\\'
    schema = {
        "type": "object",
        "properties": {name: {"type": "integer"}},
        "required": [name],
        "additionalProperties": False,
    }
    validate_arguments(schema, {name: 3})
    for wrong in ({name: "three"}, {}, {"x": 3}, {name: 3, "y": 1}):
        with pytest.raises(InvalidToolArguments):
            validate_arguments(schema, wrong)


def test_every_hostile_schema_through_the_call_check(tmp_path: Path) -> None:
    """The path every call takes: a schema its metaschema refuses is a SchemaError before any
    code is generated; the others accept and refuse as jsonschema does; nothing runs."""
    marker = tmp_path / "ran"
    for name, schema in _schemas(marker).items():
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError:
            with pytest.raises(SchemaError):
                validate_arguments(schema, {})
            continue
        for instance in INSTANCES:
            try:
                expect: bool | None = jsonschema.Draft202012Validator(schema).is_valid(instance)
            except referencing.exceptions.Unresolvable:
                expect = None  # a $ref to nowhere: the call's check says so
            try:
                validate_arguments(schema, instance)
                accepted: bool | str | None = True
            except InvalidToolArguments:
                accepted = False
            except SchemaError as exc:
                refused = str(exc)
                accepted = None if "not embedded" in refused else refused
            assert accepted == expect, (name, instance)
        assert not marker.exists(), f"{name}: the schema ran code"

"""A quick yes for a JSON Schema check: fastjsonschema's generated code.

``jsonschema`` walks a schema keyword by keyword on every check (~12 us for a one-property
object, a new validator object per property); ``fastjsonschema`` compiles a schema once into
Python code (~0.5 us). Only its *yes* is taken: an instance it refuses, a schema it cannot
compile, or a schema outside the subset below goes to ``jsonschema``, which stays the judge
(its answer and its messages are what a call gets), so where the two could differ a call is
never let through that ``jsonschema`` would refuse.

The subset is the keywords on which both agree, whichever draft ``jsonschema`` applies
(2020-12 by default for arguments, draft-07 for output schemas; fastjsonschema applies
draft-07's rules, the same for these): types, properties and their relatives, lengths, bounds,
``anyOf``/``oneOf``/``allOf``/``not``, ``if``/``then``/``else``, string-only ``enum`` and
``const`` (its equality is Python's, for which ``True == 1``), annotations, ``format`` (neither
asserts it), a local ``$ref`` with nothing but annotations beside it (draft-07 ignores the
siblings of a ``$ref``), and a ``pattern`` without ``(?`` (fastjsonschema reads ``$`` as
``\\Z``, which only narrows a pattern that has no lookaround). Anything else (``multipleOf``,
``uniqueItems``, ``$id``, ``dependentRequired``, ``prefixItems``, ``unevaluated*``, ...) has
no quick check. Without ``fastjsonschema`` installed every check is ``jsonschema``'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

__all__ = ["quick_check"]

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly"}
    | {"writeOnly"}
)
_PLAIN = _ANNOTATIONS | {
    "type",
    "required",
    "format",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
}
_SCHEMA = frozenset({"items", "additionalProperties", "not", "propertyNames", "if", "then", "else"})
_SCHEMA_MAP = frozenset({"properties", "$defs", "definitions"})
_SCHEMA_LIST = frozenset({"anyOf", "oneOf", "allOf"})
_DRAFT7 = frozenset(
    {"http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema"}
)


def quick_check(key: str) -> Callable[[Any], bool] | None:
    """For the schema whose canonical JSON is ``key``: a function that says True when an
    instance surely validates (False: ask ``jsonschema``), or None when the schema has no
    quick check (see the module docstring). Compiled once per schema."""
    return _compile(key)


@lru_cache(maxsize=2048)
def _compile(key: str) -> Callable[[Any], bool] | None:
    schema = json.loads(key)
    if not _agrees(schema, root=True):
        return None
    try:
        import fastjsonschema
    except ImportError:
        return None
    try:
        validate = fastjsonschema.compile(schema, use_formats=False)
    except Exception:  # a pattern Python's re refuses, a $ref it cannot resolve: no quick yes
        return None
    refused = fastjsonschema.JsonSchemaException

    def check(instance: Any) -> bool:
        try:
            validate(instance)
        except refused:
            return False
        except Exception:  # e.g. an instance too deep: jsonschema says what it makes of it
            return False
        return True

    return check


def _agrees(schema: Any, *, root: bool = False) -> bool:
    """Whether ``schema`` keeps to the keywords on which both libraries agree."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    for name, value in schema.items():
        if name in _PLAIN:
            continue
        if name in _SCHEMA:
            ok = _agrees(value)
        elif name in _SCHEMA_MAP:
            ok = isinstance(value, dict) and all(_agrees(s) for s in value.values())
        elif name in _SCHEMA_LIST:
            ok = isinstance(value, list) and all(_agrees(s) for s in value)
        elif name == "enum":
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        elif name == "const":
            ok = isinstance(value, str)
        elif name == "pattern":
            ok = isinstance(value, str) and "(?" not in value
        elif name == "$ref":
            ok = (
                isinstance(value, str)
                and value.startswith("#")
                and schema.keys() - {"$ref"} <= _ANNOTATIONS
            )
        elif name == "$schema":
            ok = root and value in _DRAFT7
        else:
            ok = False
        if not ok:
            return False
    return True

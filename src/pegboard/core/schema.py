"""JSON Schema checks for tool definitions and tool-call arguments.

Validation uses ``jsonschema`` (draft 2020-12 by default, draft-07 and older via ``$schema``)
with an explicit empty ``referencing.Registry``: local ``$ref``/``$defs`` resolve, remote
references are never fetched. Compiled validators are cached by canonical schema JSON; a
valid instance of a schema in :mod:`pegboard.core.quick_check`'s subset is recognised by
its compiled code first.
Problems come back as short text a model can act on: ``limit: expected integer, got string
"ten"``. The signature stub shown by ``tool_inspect`` lives in :mod:`pegboard.core.stub`.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from functools import lru_cache
from itertools import islice
from typing import TYPE_CHECKING, Any

from pegboard.core.definition import canonical_json
from pegboard.core.quick_check import quick_check
from pegboard.core.stub import render_stub
from pegboard.errors import InvalidToolArguments, SchemaError

# jsonschema loads when a schema is first checked or arguments validated, not when a tool
# is listed (40 ms of every read command).
if TYPE_CHECKING:
    import jsonschema

__all__ = [
    "MAX_PROBLEMS",
    "apply_defaults",
    "check_schema",
    "compile_arguments_check",
    "render_stub",
    "validate_arguments",
]

MAX_PROBLEMS = 5
_MAX_ERRORS = 50  # errors collected before giving up (a 10,000-item array of wrong types)
_VALUE_PREVIEW = 40


def check_schema(schema: Mapping[str, Any]) -> None:
    """Raise :class:`SchemaError` unless ``schema`` is a usable tool input schema.

    It must be a JSON object whose ``type`` is ``"object"`` (or absent) and which is valid
    against its draft's metaschema. Boolean and empty sub-schemas are fine.
    """
    if not isinstance(schema, Mapping):
        raise SchemaError(
            f"A tool input schema must be a JSON object, got {_json_type(schema)}. "
            'Use {"type": "object", "properties": {...}}.'
        )
    kind = schema.get("type")
    if kind is not None and kind != "object":
        raise SchemaError(
            f"A tool input schema must describe an object, but its type is {json.dumps(kind)}. "
            'Wrap the value in an object: {"type": "object", "properties": {"value": ...}}.'
        )
    _compiled(schema_key(schema))


def compile_arguments_check(schema: Mapping[str, Any]) -> None:
    """Compile (and cache) both checks :func:`validate_arguments` runs for ``schema``: the
    ``jsonschema`` validator (its metaschema check first) and the quick check's generated code
    (:mod:`pegboard.core.quick_check`: fastjsonschema's import and code generation, ~9 ms of
    CPU for ``tool_search``'s schema), so that a first call compiles neither.

    Raises :class:`SchemaError` as :func:`check_schema` does."""
    check_schema(schema)
    quick_check(schema_key(schema))


def validate_arguments(
    schema: Mapping[str, Any],
    args: Any,
    *,
    tool_name: str | None = None,
    key: str | None = None,
) -> None:
    """Raise :class:`InvalidToolArguments` listing (at most 5) problems with ``args``.

    Raises :class:`SchemaError` if the schema itself is malformed or references a schema that
    is not embedded in it. ``key``: :func:`schema_key` of ``schema``, if the caller keeps it.
    """
    key = key if key is not None else schema_key(schema)
    validator = _compiled(key)
    quick = quick_check(key)
    if quick is not None and quick(args):
        return
    try:
        errors = sorted(islice(validator.iter_errors(args), _MAX_ERRORS), key=_error_order)
        problems: list[str] = []
        for error in errors:
            for problem in _describe(error, args):
                if problem not in problems:
                    problems.append(problem)
    except _unresolvable() as exc:  # evaluated only when something was raised
        raise SchemaError(
            f"The schema of {tool_name or 'this tool'} references {exc}, which is not embedded "
            "in it; pegboard never fetches remote schemas. Inline it under $defs."
        ) from exc
    if not problems:
        return
    if len(errors) == _MAX_ERRORS:  # stopped looking: say so rather than give a count
        problems = [*problems[:MAX_PROBLEMS], "... and more problems"]
    elif len(problems) > MAX_PROBLEMS:
        extra = len(problems) - MAX_PROBLEMS
        more = "problem" if extra == 1 else "problems"
        problems = [*problems[:MAX_PROBLEMS], f"... and {extra} more {more}"]
    raise InvalidToolArguments(tool_name, problems)


def apply_defaults(schema: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` plus the JSON Schema ``default`` of every missing top-level property.

    Only properties declared directly under the schema's ``properties`` with a ``default``
    are filled (a ``$ref``'d or boolean property schema is left alone); values the caller
    sent, ``null`` included, are never replaced. Defaults are deep-copied, so a tool that
    mutates its arguments cannot change the schema. ``args`` itself is not modified.
    """
    filled = dict(args)
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return filled
    for name, prop in properties.items():
        if name not in filled and isinstance(prop, Mapping) and "default" in prop:
            filled[name] = copy.deepcopy(prop["default"])
    return filled


def schema_key(schema: Mapping[str, Any]) -> str:
    """The schema's canonical JSON: what its compiled validator is cached under."""
    if not isinstance(schema, Mapping):
        check_schema(schema)
    try:
        return canonical_json(schema)
    except (TypeError, ValueError, RecursionError) as exc:
        raise SchemaError(f"The schema is not JSON-serialisable: {exc}") from exc


def _unresolvable() -> type[Exception]:
    import referencing.exceptions

    return referencing.exceptions.Unresolvable


def _compiled(key: str) -> jsonschema.protocols.Validator:
    compiled = _compile(key)
    if isinstance(compiled, str):
        raise SchemaError(compiled)
    return compiled


@lru_cache(maxsize=2048)
def _compile(key: str) -> jsonschema.protocols.Validator | str:
    """The validator for a schema, or why the schema is invalid (cached either way: the
    metaschema check costs milliseconds and a broken tool is called again and again)."""
    import jsonschema
    import referencing
    from jsonschema.validators import validator_for

    schema = json.loads(key)
    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = _path(exc.absolute_path) if exc.absolute_path else "the schema root"
        return (
            f"Invalid JSON Schema at {where}: {_shorten(exc.message, 160)}. "
            f"Fix the schema so it validates against {cls.__name__}'s metaschema."
        )
    # An explicit empty registry: local $refs resolve, remote ones are never fetched.
    validator: jsonschema.protocols.Validator = cls(schema, registry=referencing.Registry())
    return validator


def _error_order(error: jsonschema.ValidationError) -> tuple[tuple[tuple[int, Any], ...], str]:
    """Document order: by path (array indexes numerically), then message."""
    parts = tuple((0, p) if isinstance(p, int) else (1, str(p)) for p in error.absolute_path)
    return (parts, error.message)


def _describe(error: jsonschema.ValidationError, args: Any) -> list[str]:
    where = _path(error.absolute_path)
    kind, expected, instance = error.validator, error.validator_value, error.instance
    if kind is None:  # a `false` sub-schema: jsonschema drops the last path segment
        return [f"{_false_schema_path(error, args)}: not allowed here (got {_preview(instance)})"]
    if kind == "required" and isinstance(instance, Mapping):
        return [
            f"{_join(where, name)}: required property missing"
            for name in expected
            if name not in instance
        ]
    if kind == "additionalProperties" and isinstance(instance, Mapping):
        return [
            f"{_join(where, name)}: unexpected property"
            for name in sorted(_extra_properties(error.schema, instance))
        ]
    if kind == "type":
        wanted = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return [f"{where}: expected {wanted}, got {_describe_value(instance)}"]
    if kind == "enum":
        options = ", ".join(json.dumps(v, ensure_ascii=False) for v in expected)
        return [f"{where}: expected one of {options}, got {_preview(instance)}"]
    if kind == "const":
        return [f"{where}: expected {_preview(expected)}, got {_preview(instance)}"]
    if kind in ("anyOf", "oneOf") and error.context:
        return _describe_variants(error, where, args)
    return [f"{where}: {_shorten(error.message, 120)}"]


def _describe_variants(error: jsonschema.ValidationError, where: str, args: Any) -> list[str]:
    """Explain an ``anyOf``/``oneOf`` miss by the variant whose type fits, if exactly one does."""
    by_variant: dict[Any, list[jsonschema.ValidationError]] = {}
    for sub in error.context or []:
        by_variant.setdefault(sub.schema_path[0] if sub.schema_path else None, []).append(sub)
    fitting = [
        subs
        for subs in by_variant.values()
        if not any(s.validator == "type" and not s.relative_path for s in subs)
    ]
    if len(fitting) == 1:
        problems: list[str] = []
        for sub in sorted(fitting[0], key=_error_order):
            problems += _describe(sub, args)
        return problems
    wanted = [
        s.validator_value for s in error.context or [] if s.validator == "type" and not s.path
    ]
    if wanted and len(wanted) == len(by_variant):
        names = " or ".join(" or ".join(w) if isinstance(w, list) else str(w) for w in wanted)
        return [f"{where}: expected {names}, got {_describe_value(error.instance)}"]
    return [f"{where}: does not match any of the allowed shapes"]


def _false_schema_path(error: jsonschema.ValidationError, args: Any) -> str:
    """Recover the offending key: the one child of the parent holding this very value."""
    parent = args
    for part in error.absolute_path:
        try:
            parent = parent[part]
        except (KeyError, IndexError, TypeError):
            return _path(error.absolute_path)
    where = _path(error.absolute_path)
    if isinstance(parent, Mapping):
        keys = [k for k, v in parent.items() if v is error.instance]
        if len(keys) == 1:
            return _join(where, str(keys[0]))
    return where


def _extra_properties(schema: Any, instance: Mapping[str, Any]) -> list[str]:
    if not isinstance(schema, Mapping):
        return []
    known = set(schema.get("properties", {}))
    patterns = list(schema.get("patternProperties", {}))
    return [
        name
        for name in instance
        if name not in known and not any(re.search(p, name) for p in patterns)
    ]


def _path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(root)"


def _join(where: str, name: str) -> str:
    return name if where == "(root)" else f"{where}.{name}"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _describe_value(value: Any) -> str:
    kind = _json_type(value)
    if kind in ("array", "object", "null"):
        return kind
    return f"{kind} {_preview(value)}"


def _preview(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return _shorten(text, _VALUE_PREVIEW)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"

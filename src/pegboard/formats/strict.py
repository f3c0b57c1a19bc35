"""Rewrite a tool's JSON Schema for a provider's strict (grammar-constrained) mode.

OpenAI strict mode: every object has ``additionalProperties: false`` and lists every property
in ``required``; an optional property becomes nullable (``null`` means "not given", and
:func:`relax_strict_arguments` turns it back into an absent key before validation). Anthropic
strict mode keeps optional properties but also needs ``additionalProperties: false``.

Keywords the provider cannot enforce but that only narrow values (``minLength``, ``default``,
...) are dropped: pegboard validates the arguments against the original schema anyway, and a
dropped bound is appended to the description (``(minLength: 1)``) so the model still sees it. Shapes
strict mode cannot express (free-form objects, ``not``, ``if``, tuples, untyped values) raise
:class:`SchemaError` naming the path; set ``strict=False`` on such a tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pegboard.errors import SchemaError

_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "default", "examples", "deprecated", "readOnly", "writeOnly"}
)
_OPENAI_DROPPED = _ANNOTATIONS | {
    "minLength",
    "maxLength",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "minProperties",
    "maxProperties",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
}
_ANTHROPIC_DROPPED = _OPENAI_DROPPED | {
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "maxItems",
}
_REFUSED = ("not", "if", "then", "else", "patternProperties", "prefixItems", "dependentSchemas")
_REFUSED_ALSO = ("dependentRequired", "dependencies")
_SHAPED = ("type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "properties", "items")
_PRIMITIVES = frozenset({"string", "integer", "number", "boolean"})
MAX_STRICT_DEPTH = 10


@dataclass(frozen=True, slots=True)
class _Rules:
    provider: str
    all_required: bool
    dropped: frozenset[str]
    allow_recursion: bool
    formats: frozenset[str] = frozenset()
    max_min_items: float = float("inf")


_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
OPENAI = _Rules(
    "OpenAI", all_required=True, dropped=_OPENAI_DROPPED, allow_recursion=True, formats=_FORMATS
)
# Anthropic accepts minItems of 0 or 1 only.
ANTHROPIC = _Rules(
    "Anthropic",
    all_required=False,
    dropped=_ANTHROPIC_DROPPED,
    allow_recursion=False,
    formats=_FORMATS | {"uri"},
    max_min_items=1,
)


def openai_strict_schema(schema: Mapping[str, Any], *, tool_name: str = "") -> dict[str, Any]:
    """``schema`` rewritten for OpenAI ``strict: true`` (Chat Completions and Responses)."""
    return _Rewriter(OPENAI, schema, tool_name).root()


def anthropic_strict_schema(schema: Mapping[str, Any], *, tool_name: str = "") -> dict[str, Any]:
    """``schema`` rewritten for Anthropic ``strict: true`` tool use."""
    return _Rewriter(ANTHROPIC, schema, tool_name).root()


class _Rewriter:
    def __init__(self, rules: _Rules, schema: Mapping[str, Any], tool_name: str) -> None:
        self.rules = rules
        self.source = schema
        self.tool_name = tool_name

    def fail(self, path: str, problem: str) -> SchemaError:
        who = f"tool {self.tool_name}" if self.tool_name else "this tool"
        return SchemaError(
            f"{self.rules.provider} strict mode cannot express the schema of {who} at {path}: "
            f"{problem}. Set strict=False on the tool, or simplify the schema."
        )

    def root(self) -> dict[str, Any]:
        if not isinstance(self.source, Mapping) or self.source.get("type", "object") != "object":
            raise self.fail("the root", "the root must be an object schema")
        if any(k in self.source for k in ("anyOf", "oneOf")):
            raise self.fail("the root", "the root cannot be a union")
        out = self.node(self.source, "#", 0)
        for key in ("$defs", "definitions"):
            defs = self.source.get(key)
            if isinstance(defs, Mapping):
                out[key] = {n: self.node(s, f"#/{key}/{n}", 1) for n, s in defs.items()}
        return out

    def node(self, schema: Any, path: str, depth: int) -> dict[str, Any]:
        if depth > MAX_STRICT_DEPTH:
            raise self.fail(path, f"nesting deeper than {MAX_STRICT_DEPTH} levels")
        if not isinstance(schema, Mapping) or not any(k in schema for k in _SHAPED):
            shape = "an any-value schema" if schema in ({}, True) else "a schema without a type"
            raise self.fail(path, f"{shape} cannot be constrained; give it a type")
        for key in (*_REFUSED, *_REFUSED_ALSO):
            if key in schema:
                raise self.fail(path, f'the "{key}" keyword is not supported')
        ref = schema.get("$ref")
        if isinstance(ref, str) and not self.rules.allow_recursion and self._recursive(ref):
            raise self.fail(path, "recursive schemas are not supported")
        if isinstance(ref, str) and len(schema) > 1:
            schema = self._inline(schema, ref, path)
        out: dict[str, Any] = {}
        hints: list[str] = []
        for key, value in schema.items():
            if key in self.rules.dropped or self._unsupported_value(key, value):
                if key not in _ANNOTATIONS:  # a dropped bound still guides the model as text
                    hints.append(f"{key}: {json.dumps(value, ensure_ascii=False)}")
                continue
            if key in ("$defs", "definitions"):
                continue
            if key == "properties":
                out[key] = {
                    name: self.node(sub, f"{path}/properties/{name}", depth + 1)
                    for name, sub in value.items()
                }
            elif key == "items":
                out[key] = self.node(value, f"{path}/items", depth + 1)
            elif key in ("anyOf", "oneOf"):
                out["anyOf"] = [
                    self.node(sub, f"{path}/{key}/{i}", depth + 1) for i, sub in enumerate(value)
                ]
            elif key == "allOf":
                if len(value) != 1:
                    raise self.fail(path, '"allOf" with more than one schema is not supported')
                out.update(self.node(value[0], f"{path}/allOf/0", depth))
            else:
                out[key] = value
        if hints:
            note = f"({', '.join(hints)})"
            out["description"] = f"{out['description']} {note}" if out.get("description") else note
        if "type" not in out and "properties" in out:
            out["type"] = "object"
        elif "type" not in out and "items" in out:
            out["type"] = "array"
        if _is_object(out):
            self._close_object(out, schema, path)
        return out

    def _inline(self, schema: Mapping[str, Any], ref: str, path: str) -> dict[str, Any]:
        """``$ref`` with sibling keywords: providers want the target inlined, siblings winning."""
        target = _deref(self.source, {"$ref": ref}) if ref.startswith("#") else None
        if not isinstance(target, Mapping):
            raise self.fail(path, f"the reference {ref} does not resolve inside the schema")
        return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}

    def _unsupported_value(self, key: str, value: Any) -> bool:
        if key == "format":
            return not isinstance(value, str) or value not in self.rules.formats
        limit = self.rules.max_min_items
        return key == "minItems" and isinstance(value, int | float) and value > limit

    def _close_object(self, out: dict[str, Any], schema: Mapping[str, Any], path: str) -> None:
        extra = schema.get("additionalProperties", False)
        if extra is not False:
            raise self.fail(
                path, "objects with free-form keys (additionalProperties) are not allowed"
            )
        out["additionalProperties"] = False
        props: dict[str, Any] = out.setdefault("properties", {})
        # An inlined single allOf has already closed ``out``; keep its required list.
        required = [r for r in schema.get("required", out.get("required", [])) if r in props]
        if self.rules.all_required:
            for name in props:
                if name not in required:
                    props[name] = _nullable(props[name])
            required = list(props)
        out["required"] = required

    def _recursive(self, ref: str) -> bool:
        return ref == "#" or any(
            ref.startswith(f"#/{k}/") and _refers_to(self.source, ref, ref)
            for k in ("$defs", "definitions")
        )


def _refers_to(
    root: Mapping[str, Any], ref: str, target: str, seen: frozenset[str] = frozenset()
) -> bool:
    """Whether the definition at ``ref`` (transitively) references ``target``."""
    node: Any = root
    for part in ref[2:].split("/"):
        node = node.get(part) if isinstance(node, Mapping) else None
    refs = list(_refs_in(node))
    if target in refs:
        return True
    return any(_refers_to(root, r, target, seen | {ref}) for r in refs if r not in seen | {ref})


def _refs_in(node: Any) -> Any:
    if isinstance(node, Mapping):
        if isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/"):
            yield node["$ref"]
        for value in node.values():
            yield from _refs_in(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs_in(value)


def _is_object(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return (
        kind == "object"
        or (isinstance(kind, list) and "object" in kind)
        or (kind is None and "properties" in schema)
    )


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if "anyOf" in schema:
        if {"type": "null"} not in schema["anyOf"]:
            return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
        return schema
    if kind == "null":
        return schema
    if (
        isinstance(kind, str)
        and kind in _PRIMITIVES
        and "enum" not in schema
        and "const" not in schema
    ):
        return {**schema, "type": [kind, "null"]}
    if isinstance(kind, list):
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    description = schema.get("description")
    inner = {k: v for k, v in schema.items() if k != "description"}
    wrapped: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
    if description is not None:
        wrapped["description"] = description
    return wrapped


def relax_strict_arguments(schema: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """Undo OpenAI strict-mode nulls: drop ``null`` values of properties that were optional in
    the original ``schema`` and do not themselves accept ``null``. Nested objects too."""
    return _relax_object(schema, schema, args)


def _relax_object(root: Mapping[str, Any], schema: Any, args: Mapping[str, Any]) -> dict[str, Any]:
    schema = _object_variant(root, _deref(root, schema))
    props = schema.get("properties", {}) if isinstance(schema, Mapping) else {}
    required = set(schema.get("required", [])) if isinstance(schema, Mapping) else set()
    out: dict[str, Any] = {}
    for key, value in args.items():
        sub = _object_variant(root, _deref(root, props.get(key)))
        if value is None and key in props and key not in required and not _accepts_null(root, sub):
            continue
        out[key] = _relax_value(root, sub, value)
    return out


def _relax_value(root: Mapping[str, Any], schema: Any, value: Any) -> Any:
    schema = _object_variant(root, _deref(root, schema))
    if not isinstance(schema, Mapping):
        return value
    if isinstance(value, Mapping):
        return _relax_object(root, schema, value)
    if isinstance(value, list) and schema.get("items") is not None:
        return [_relax_value(root, schema["items"], item) for item in value]
    return value


def _object_variant(root: Mapping[str, Any], schema: Any) -> Any:
    """An ``anyOf``/``oneOf`` whose single non-null variant carries the shape, unwrapped."""
    if not isinstance(schema, Mapping) or "properties" in schema or "items" in schema:
        return schema
    variants = [_deref(root, v) for v in (*schema.get("anyOf", ()), *schema.get("oneOf", ()))]
    shaped = [v for v in variants if isinstance(v, Mapping) and v.get("type") != "null"]
    if len(shaped) == 1 and len(variants) == 2:
        return {**shaped[0], "anyOf": variants}
    return schema


def _deref(root: Mapping[str, Any], schema: Any) -> Any:
    for _ in range(16):
        if not (isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str)):
            break
        node: Any = root
        for part in schema["$ref"].lstrip("#").split("/")[1:]:
            node = node.get(part) if isinstance(node, Mapping) else None
        schema = node
    return schema


def _accepts_null(root: Mapping[str, Any], schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return schema is not False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if None in schema.get("enum", []) or ("const" in schema and schema["const"] is None):
        return True
    variants = [*schema.get("anyOf", []), *schema.get("oneOf", [])]
    return any(_accepts_null(root, _deref(root, v)) for v in variants) or (
        not variants and kind is None and "enum" not in schema and "const" not in schema
    )

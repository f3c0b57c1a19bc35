"""The JSDoc signature stub ``tool_inspect`` shows: enough to call a tool correctly.

::

    /**
     * Search the web.
     *
     * @param {Object} params - Parameters
     * @param {integer} [params.limit] - Max results (default: 10)
     * @param {string} params.query - What to look for (required)
     * @returns {Array<string>} - Matching URLs
     */
    function web_search(params) {}

Properties are alphabetical, nested objects and array items recurse as ``params.a.b`` and
``params.a[].b`` to :data:`MAX_NESTING_DEPTH`, enums become literal unions (the first
:data:`MAX_ENUM_VALUES`, then a count of the rest), ``$ref`` resolves inside the schema,
``anyOf``/``oneOf`` become unions. A parameter shows the first line of its description, cut at
:data:`MAX_SUMMARY_CHARS`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pegboard.core.definition import ToolDefinition

MAX_NESTING_DEPTH = 5
MAX_ENUM_VALUES = 100
MAX_SUMMARY_CHARS = 300
_SCALARS = {"string", "integer", "number", "boolean", "null"}


def render_stub(definition: ToolDefinition) -> str:
    """Render the signature stub of one tool (see the module docstring for the shape)."""
    name, description = definition.name, definition.description
    input_schema, output_schema = definition.input_schema, definition.output_schema
    lines = ["/**"]
    text = description.strip()
    if text:
        lines += [f" * {line.rstrip()}".rstrip() for line in _safe(text).splitlines()]
        lines.append(" *")
    lines.append(" * @param {Object} params - Parameters")
    _Renderer(input_schema, "@param", show_required=True).fields(input_schema, "params", 1, lines)
    if output_schema is not None:
        out = _Renderer(output_schema, "@returns", show_required=False)
        node = out.resolve(output_schema)
        head = f" * @returns {{{out.type_of(node)}}}"
        summary = _first_line(node.get("description") if isinstance(node, Mapping) else None)
        lines.append(f"{head} - {summary}" if summary else head)
        out.fields(node, "returns", 1, lines)
    lines += [" */", f"function {name}(params) {{}}"]
    return "\n".join(lines)


def resolve_ref(root: Any, schema: Any) -> Any:
    """``schema`` with its local ``$ref`` chain followed inside ``root`` (unknown -> ``{}``)."""
    return _Renderer(root, "", show_required=False).resolve(schema)


class _Renderer:
    def __init__(self, root: Any, tag: str, *, show_required: bool) -> None:
        self.root = root
        self.tag = tag
        self.show_required = show_required

    def resolve(self, schema: Any, seen: frozenset[str] = frozenset()) -> Any:
        """Follow local ``$ref`` chains (cycles and unknown targets give ``{}``)."""
        while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
            ref = schema["$ref"]
            if ref in seen or not ref.startswith("#"):
                return {}
            seen = seen | {ref}
            target = _pointer(self.root, ref[1:])
            if target is None:
                return {}
            if len(schema) > 1:  # sibling keywords (description, default) win over the target
                merged = dict(target) if isinstance(target, Mapping) else {}
                merged.update({k: v for k, v in schema.items() if k != "$ref"})
                target = merged
            schema = target
        return schema

    def type_of(self, schema: Any, depth: int = 0) -> str:
        schema = self.resolve(schema)
        if schema is True or schema == {}:
            return "*"
        if schema is False:
            return "never"
        if not isinstance(schema, Mapping) or depth > MAX_NESTING_DEPTH:
            return "*"
        if "const" in schema:
            return _literal(schema["const"])
        if isinstance(schema.get("enum"), list):
            values = [_literal(v) for v in schema["enum"][:MAX_ENUM_VALUES]]
            if len(schema["enum"]) > MAX_ENUM_VALUES:
                values.append(f"...({len(schema['enum']) - MAX_ENUM_VALUES} more)")
            return "|".join(values) or "never"
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                return _union(self.type_of(s, depth + 1) for s in schema[key])
        if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
            return self.type_of(schema["allOf"][0], depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union(self.type_of({**schema, "type": k}, depth) for k in kind)
        if kind in _SCALARS:
            return str(kind)
        if kind == "array" or (kind is None and "items" in schema):
            items = schema.get("items")
            return f"Array<{self.type_of(items, depth + 1) if items is not None else '*'}>"
        if kind == "object" or (kind is None and ("properties" in schema or "allOf" in schema)):
            extra = schema.get("additionalProperties")
            if not schema.get("properties") and isinstance(extra, Mapping) and extra:
                return f"Object<string, {self.type_of(extra, depth + 1)}>"
            return "Object"
        return "*"

    def fields(self, schema: Any, prefix: str, depth: int, lines: list[str]) -> None:
        """Append one line per property of ``schema`` (an object), recursing into children."""
        if depth > MAX_NESTING_DEPTH:
            return
        node = self._object_variant(self.resolve(schema))
        if node is None:
            return
        props = node.get("properties")
        if not isinstance(props, Mapping):
            return
        required = node.get("required", [])
        required = set(required) if isinstance(required, list) else set()
        for key in sorted(props):
            child = self.resolve(props[key])
            path = f"{prefix}.{key}"
            lines.append(self._line(child, path, key in required))
            self.fields(child, path, depth + 1, lines)
            items = self._array_items(child)
            if items is not None:
                self.fields(items, f"{path}[]", depth + 1, lines)

    def _line(self, child: Any, path: str, required: bool) -> str:
        name = path if required else f"[{path}]"
        text = f" * {self.tag} {{{self.type_of(child)}}} {name}"
        summary = _first_line(self._description(child))
        if summary:
            text += f" - {summary}"
        if required and self.show_required:
            text += " (required)"
        elif isinstance(child, Mapping) and "default" in child:
            text += f" (default: {_literal(child['default'])})"
        return text

    def _description(self, schema: Any) -> Any:
        """A schema's description, else that of its only non-null ``anyOf``/``oneOf`` variant."""
        if not isinstance(schema, Mapping):
            return None
        if "description" in schema:
            return schema["description"]
        for key in ("anyOf", "oneOf"):
            variants = schema.get(key)
            if isinstance(variants, list):
                real = [v for v in map(self.resolve, variants) if v != {"type": "null"}]
                if len(real) == 1 and isinstance(real[0], Mapping):
                    return real[0].get("description")
        return None

    def _object_variant(self, schema: Any) -> Mapping[str, Any] | None:
        """The schema itself if it has properties, else its single object-shaped variant."""
        if not isinstance(schema, Mapping):
            return None
        if "properties" in schema:
            return schema
        for key in ("anyOf", "oneOf", "allOf"):
            variants = schema.get(key)
            if isinstance(variants, list):
                shaped = [v for v in map(self.resolve, variants) if _has_properties(v)]
                if len(shaped) == 1:
                    found: Mapping[str, Any] = shaped[0]
                    return found
        return None

    def _array_items(self, schema: Any) -> Any:
        if not isinstance(schema, Mapping):
            return None
        if schema.get("type") == "array" or "items" in schema:
            return schema.get("items")
        for key in ("anyOf", "oneOf"):
            variants = schema.get(key)
            if isinstance(variants, list):
                arrays = [v for v in map(self.resolve, variants) if _is_array(v)]
                if len(arrays) == 1:
                    return arrays[0].get("items")
        return None


def _has_properties(schema: Any) -> bool:
    return isinstance(schema, Mapping) and isinstance(schema.get("properties"), Mapping)


def _is_array(schema: Any) -> bool:
    return isinstance(schema, Mapping) and (schema.get("type") == "array" or "items" in schema)


def _pointer(root: Any, pointer: str) -> Any:
    node = root
    for raw in pointer.split("/")[1:] if pointer else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _union(types: Any) -> str:
    seen: list[str] = []
    for t in types:
        if t not in seen:
            seen.append(t)
    return "|".join(seen) or "*"


def _literal(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return json.dumps(str(value), ensure_ascii=False)


def _first_line(text: Any) -> str:
    if not isinstance(text, str):
        return ""
    for line in text.strip().splitlines():
        if line.strip():
            line = line.strip()
            if len(line) > MAX_SUMMARY_CHARS:
                line = line[: MAX_SUMMARY_CHARS - 1].rstrip() + "…"
            return _safe(line)
    return ""


def _safe(text: str) -> str:
    """Keep a comment body from closing the comment early."""
    return text.replace("*/", "*\\/")

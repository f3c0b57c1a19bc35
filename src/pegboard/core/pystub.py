"""The Python signature of a tool, as ``tool_exec`` code calls it.

::

    async def mcp__notes__add(*, a: int, b: int = 0) -> dict:
        \"\"\"Add two numbers.

        a: First addend.
        b: Second addend.
        \"\"\"

Keyword-only parameters (the sandbox accepts nothing else), required ones first, each in
alphabetical order; JSON Schema types become Python ones (``enum`` -> ``Literal[...]``,
``anyOf`` -> ``A | B``, arrays -> ``list[T]``, objects -> ``dict``). An optional parameter
without a default shows ``= None``. The JSDoc form of :mod:`pegboard.core.stub` is unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pegboard.core.stub import MAX_ENUM_VALUES, MAX_NESTING_DEPTH, MAX_SUMMARY_CHARS, resolve_ref

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def render_python_signature(
    name: str,
    description: str,
    input_schema: Mapping[str, Any],
    output_schema: Mapping[str, Any] | None = None,
) -> str:
    """``async def name(*, ...) -> T`` with a docstring of the description and parameters."""
    props = input_schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    required = input_schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    ordered = sorted(props, key=lambda key: (key not in required, key))
    params: list[str] = []
    docs: list[str] = []
    for key in ordered:
        schema = resolve_ref(input_schema, props[key])
        text = f"{key}: {_type(input_schema, schema)}"
        if key not in required:
            default = schema.get("default") if isinstance(schema, Mapping) else None
            text += f" = {_python_literal(default)}"
        params.append(text)
        summary = _summary(schema.get("description") if isinstance(schema, Mapping) else None)
        if summary:
            docs.append(f"    {key}: {summary}")
    returns = "Any"
    if output_schema is not None:
        returns = _type(output_schema, resolve_ref(output_schema, output_schema))
    head = (
        f"async def {name}(*, {', '.join(params)}) -> {returns}:"
        if params
        else (f"async def {name}() -> {returns}:")
    )
    body = [line.rstrip() for line in description.strip().replace('"""', "'''").splitlines()]
    quote = '"' * 3
    if len(body) == 1 and not docs:
        return f"{head}\n    {quote}{body[0]}{quote}"
    doc = ['    """' + (body[0] if body else "")]
    doc += [f"    {line}".rstrip() for line in body[1:]]
    if docs:
        doc += ["", *docs]
    doc.append('    """')
    return "\n".join([head, *doc]) if len(doc) > 2 or body else f"{head} ..."


def _type(root: Any, schema: Any, depth: int = 0) -> str:
    schema = resolve_ref(root, schema)
    if not isinstance(schema, Mapping) or not schema or depth > MAX_NESTING_DEPTH:
        return "Any"
    if "const" in schema:
        return f"Literal[{_python_literal(schema['const'])}]"
    if isinstance(schema.get("enum"), list):
        values = [_python_literal(v) for v in schema["enum"][:MAX_ENUM_VALUES]]
        return f"Literal[{', '.join(values)}]" if values else "Any"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return _union(_type(root, s, depth + 1) for s in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union(_type(root, {**schema, "type": k}, depth) for k in kind)
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array" or (kind is None and "items" in schema):
        items = schema.get("items")
        return f"list[{_type(root, items, depth + 1) if items is not None else 'Any'}]"
    if kind == "object" or "properties" in schema:
        return "dict"
    return "Any"


def _union(types: Any) -> str:
    seen: list[str] = []
    for t in types:
        if t not in seen:
            seen.append(t)
    return "Any" if "Any" in seen or not seen else " | ".join(seen)


def _python_literal(value: Any) -> str:
    if value is None or isinstance(value, bool | int | float | str):
        return repr(value)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(str(value))


def _summary(text: Any) -> str:
    if not isinstance(text, str):
        return ""
    for line in text.strip().splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= MAX_SUMMARY_CHARS else line[: MAX_SUMMARY_CHARS - 1] + "…"
    return ""

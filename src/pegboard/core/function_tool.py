"""Build a :class:`Tool` from a typed Python function.

The docstring's first paragraph becomes the description and a Google-style ``Args:`` section
gives parameter descriptions; the signature becomes a JSON Schema through pydantic, which also
validates (and coerces) the arguments before every call. A parameter annotated
:class:`ToolContext` receives the call context and is hidden from the schema.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, get_type_hints

import pydantic

from pegboard.core.output import ToolOutput
from pegboard.core.tool import NeedsApproval, OutputFormatter, ToolContext
from pegboard.errors import InvalidToolArguments

if TYPE_CHECKING:
    from pegboard.core.tool import Tool

_ARG_LINE = re.compile(r"^\s{2,}(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Return (description, {param: description}) from a Google-style docstring."""
    if not doc:
        return "", {}
    text = inspect.cleandoc(doc)
    sections = re.split(r"\n\s*\n", text)
    description = " ".join(sections[0].split()) if sections else ""
    params: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            in_args, current = True, None
            continue
        if in_args:
            if stripped.endswith(":") and not line.startswith(" "):
                in_args = False
                continue
            match = _ARG_LINE.match(line)
            if match:
                current = match.group(1).lstrip("*")
                params[current] = match.group(2).strip()
            elif current and stripped:
                params[current] = f"{params[current]} {stripped}".strip()
    if description.startswith(("Args:", "Arguments:", "Parameters:")):
        description = ""
    return description, params


def tool_from_function(
    cls: type[Tool],
    fn: Callable[..., Any],
    *,
    description: str | None,
    needs_approval: NeedsApproval,
    strict: bool | None,
    annotations: Mapping[str, Any] | None,
    to_model_output: OutputFormatter,
    name: str | None = None,
    namespace: str | None = None,
) -> Tool:
    tool_name = name or fn.__name__
    signature = inspect.signature(fn)
    hints = get_type_hints(fn, include_extras=True)
    doc_description, param_docs = parse_docstring(fn.__doc__)
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{fn.__name__}: *args/**kwargs cannot be described as a tool schema")
        annotation = hints.get(name, Any)
        if annotation is ToolContext:
            context_param = name
            continue
        default = ... if param.default is param.empty else param.default
        fields[name] = (
            annotation,
            pydantic.Field(default=default, description=param_docs.get(name)),
        )
    model = pydantic.create_model(f"{fn.__name__}_args", **fields)
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    output_schema = _output_schema(hints.get("return"))
    is_async = inspect.iscoroutinefunction(fn)

    def _bind(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        try:
            parsed = model.model_validate(args)
        except pydantic.ValidationError as exc:
            raise InvalidToolArguments(tool_name, _pydantic_problems(exc)) from exc
        kwargs = {name: getattr(parsed, name) for name in fields}
        if context_param:
            kwargs[context_param] = ctx
        return kwargs

    if is_async:

        async def execute_async(args: dict[str, Any], ctx: ToolContext) -> Any:
            return await fn(**_bind(args, ctx))

        execute: Any = execute_async
    else:

        def execute_sync(args: dict[str, Any], ctx: ToolContext) -> Any:
            return fn(**_bind(args, ctx))

        execute = execute_sync

    return cls(
        description=description or doc_description or fn.__name__,
        input_schema=schema,
        execute=execute,
        output_schema=output_schema,
        needs_approval=needs_approval,
        to_model_output=to_model_output,
        strict=strict,
        annotations=annotations,
        name=tool_name,
        namespace=namespace,
    )


def _output_schema(annotation: Any) -> dict[str, Any] | None:
    if annotation in (None, type(None), inspect.Signature.empty, Any):
        return None
    if isinstance(annotation, type) and issubclass(annotation, ToolOutput):
        return None  # already model-facing content, not a structured result
    try:
        schema = pydantic.TypeAdapter(annotation).json_schema()
    except (pydantic.PydanticUserError, TypeError):
        return None
    schema.pop("title", None)
    return schema


def _pydantic_problems(exc: pydantic.ValidationError) -> list[str]:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        problems.append(f"{loc}: {err['msg']}")
    return problems

"""Builders for registry entries used by the exposition, meta and agent tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pegboard.core.entry import DeferPolicy, ToolEntry, ToolSource
from pegboard.core.registry import ToolRegistry
from pegboard.core.tool import NeedsApproval, Tool, ToolContext
from pegboard.deferral import DeferredPool, apply_defer_exposition

Calls = list[tuple[str, dict[str, Any], str]]


def query_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for"},
            "limit": {"type": "integer", "default": 10},
        },
        "required": ["query"],
    }


def heavy_schema(fields: int) -> dict[str, Any]:
    props = {
        f"field_{i}": {
            "type": "string",
            "description": f"Free-text value number {i} describing one aspect of the request",
        }
        for i in range(fields)
    }
    return {"type": "object", "properties": props}


def recorder(calls: Calls, result: Any = "ok") -> Callable[[dict[str, Any], ToolContext], Any]:
    async def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
        calls.append((ctx.call_id, dict(args), ctx.call_id.rsplit("::", 1)[-1]))
        return result

    return execute


def entry(
    name: str,
    *,
    namespace: str = "web",
    label: str | None = None,
    defer: DeferPolicy = "auto",
    description: str = "Does one thing.",
    schema: Mapping[str, Any] | None = None,
    execute: Callable[[dict[str, Any], ToolContext], Any] | None = None,
    needs_approval: NeedsApproval = None,
    source: ToolSource | None = None,
    summary: str = "",
    annotations: Mapping[str, Any] | None = None,
) -> ToolEntry:
    tool = Tool(
        description=description,
        input_schema=schema if schema is not None else query_schema(),
        execute=execute,
        needs_approval=needs_approval,
        annotations=annotations,
    )
    return ToolEntry(
        name=name,
        namespace=namespace,
        namespace_label=label,
        tool=tool,
        description=summary,
        defer=defer,
        source=source,
    )


def heavy(name: str, *, namespace: str = "mcp:s1", fields: int = 60, **kw: Any) -> ToolEntry:
    """An auto entry costing roughly 15 tokens per field (60 fields: ~900 tokens)."""
    return entry(name, namespace=namespace, schema=heavy_schema(fields), **kw)


def tools_of(*entries: ToolEntry) -> dict[str, Tool]:
    return {e.name: e.tool for e in entries}


def pool_of(*deferred: ToolEntry, inline: tuple[ToolEntry, ...] = (), **kw: Any) -> DeferredPool:
    """The pool of a request whose ``deferred`` entries are all ``defer="always"``."""
    registry = ToolRegistry([*deferred, *inline])
    result = apply_defer_exposition(tools_of(*deferred, *inline), registry, None, **kw)
    assert result.pool is not None
    return result.pool

"""The callable side of a tool: schema, executor, approval policy and output formatting."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio.to_thread

from pegboard.core.definition import ToolDefinition, canonical_json
from pegboard.core.frozen import quick_init
from pegboard.core.output import ToolOutput, to_tool_output

if TYPE_CHECKING:
    from pegboard.core.scope import ToolApplyScope

# canonical_json lives with the definition it hashes; re-exported for older import paths.
__all__ = ["Tool", "ToolContext", "ToolDefinition", "canonical_json", "is_destructive"]


def is_destructive(annotations: Mapping[str, Any] | None) -> bool:
    """Whether a tool says it may destroy data: ``destructiveHint: true``, not read-only.

    Only an explicit ``destructiveHint: true`` counts (the MCP spec's implicit default of true
    for tools that are not read-only would gate nearly every tool of older servers).
    """
    if not annotations:
        return False
    read_only = annotations.get("readOnlyHint") is True
    return annotations.get("destructiveHint") is True and not read_only


@quick_init
@dataclass(frozen=True, slots=True)
class ToolContext:
    """What an executing tool may know about the call it serves."""

    call_id: str = ""
    session_id: str | None = None
    messages: Sequence[Any] = ()
    scope: ToolApplyScope | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    # The CallSession of the call this context serves (approval handler, grants, audit): a
    # meta-tool's inner calls (tool_invoke, tool_exec) run in it, so they share its grants.
    # Typed loosely because core/ sits below calls/.
    call_session: Any = None

    def child(self, name: str) -> ToolContext:
        """The context of a nested call (``<outer>::<name>``), in the same call session."""
        return ToolContext(
            call_id=f"{self.call_id}::{name}",
            session_id=self.session_id,
            messages=self.messages,
            scope=self.scope,
            extra=self.extra,
            call_session=self.call_session,
        )


Executor: TypeAlias = Callable[[dict[str, Any], ToolContext], Awaitable[Any] | Any]
ApprovalPredicate: TypeAlias = Callable[[dict[str, Any], ToolContext], Awaitable[bool] | bool]
NeedsApproval: TypeAlias = bool | ApprovalPredicate | None
OutputFormatter: TypeAlias = Callable[[Any], ToolOutput]


@dataclass(frozen=True, eq=False)
class Tool:
    """A model-callable tool. ``execute`` may be sync (run in a worker thread) or async."""

    description: str
    input_schema: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    execute: Executor | None = None
    output_schema: Mapping[str, Any] | None = None
    needs_approval: NeedsApproval = None
    to_model_output: OutputFormatter = to_tool_output
    strict: bool | None = None
    annotations: Mapping[str, Any] | None = None
    title: str | None = None
    # Where the tool goes in a registry when it is given without a ToolEntry: its wire name
    # and namespace (``ToolRegistry([Tool.from_function(add, namespace="math")])``).
    name: str | None = None
    namespace: str | None = None

    @cached_property
    def schema_key(self) -> str:
        """:func:`~pegboard.core.schema.schema_key` of :attr:`input_schema`, computed once
        (its validator is looked up by it on every call)."""
        from pegboard.core.schema import schema_key

        return schema_key(self.input_schema)

    @cached_property
    def _async_execute(self) -> bool:
        """Whether :attr:`execute` is async (asked once: ``inspect``'s checks cost ~1% of a
        proxied call; the field is frozen)."""
        return self.execute is not None and _is_async(self.execute)

    def definition(self, name: str) -> ToolDefinition:
        """This tool's model-facing definition under the wire name ``name``."""
        return ToolDefinition(
            name=name,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            annotations=self.annotations,
            strict=self.strict,
            title=self.title,
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Call the executor, in a worker thread when it is synchronous.

        Callers must authorise and validate first; this is the raw call.
        """
        if self.execute is None:
            raise RuntimeError("tool has no execute handler")
        fn = self.execute
        if self._async_execute:
            return await fn(args, ctx)
        result = await anyio.to_thread.run_sync(lambda: fn(args, ctx))
        if inspect.isawaitable(result):
            return await result
        return result

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        description: str | None = None,
        needs_approval: NeedsApproval = None,
        strict: bool | None = None,
        annotations: Mapping[str, Any] | None = None,
        to_model_output: OutputFormatter = to_tool_output,
        name: str | None = None,
        namespace: str | None = None,
    ) -> Tool:
        """Build a tool from a typed function (see :mod:`pegboard.core.function_tool`);
        ``name`` (default: the function's) and ``namespace`` place it in a registry."""
        from pegboard.core.function_tool import tool_from_function

        return tool_from_function(
            cls,
            fn,
            description=description,
            needs_approval=needs_approval,
            strict=strict,
            annotations=annotations,
            to_model_output=to_model_output,
            name=name,
            namespace=namespace,
        )


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004
    return call is not None and inspect.iscoroutinefunction(call)

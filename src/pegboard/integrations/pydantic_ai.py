"""pegboard as a pydantic-ai toolset::

    from pydantic_ai import Agent, DeferredToolRequests
    from pegboard.integrations.pydantic_ai import PegboardToolset

    agent = Agent(model, toolsets=[PegboardToolset()], output_type=[str, DeferredToolRequests])

Every run step lists the registry's tools again, deferred for the model's context window
(behind ``tool_search`` / ``tool_inspect`` / ``tool_invoke``, with the prompt section as the
toolset's instructions). Calls run through pegboard's toolset call path. A gated call pauses
the run with pydantic-ai's :class:`~pydantic_ai.DeferredToolRequests`; once the application
answers with :class:`~pydantic_ai.DeferredToolResults` (``ToolApproved`` / ``True``), the call
runs through pegboard's authorisation with that approval (with ``metadata={call_id:
{"pegboard_decision": "allow_session"}}`` the yes covers the same call for the rest of the
session, ``tool_invoke`` included). Invalid arguments become
:class:`~pydantic_ai.ModelRetry`, so the model corrects them.
"""

from __future__ import annotations

import copy
from contextlib import AbstractAsyncContextManager
from typing import Any, Unpack

from pegboard.calls.approval import Decision
from pegboard.calls.execute import error_output
from pegboard.errors import InvalidToolArguments, OptionalDependencyMissing
from pegboard.formats.strict import relax_strict_arguments
from pegboard.integrations.bridge import FrameworkApproval, Listing, SourceOptions, ToolBridge
from pegboard.integrations.listed import result_text

try:
    from pydantic_ai import ApprovalRequired, ModelRetry, RunContext, ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
    from pydantic_core import SchemaValidator, core_schema
except ImportError as exc:  # no extra: see tests/integrations/test_imports.py
    raise OptionalDependencyMissing("pegboard.integrations.pydantic_ai", "pydantic-ai") from exc

__all__ = ["PegboardToolset"]

VIA = "pydantic_ai"
DECISION = "pegboard_decision"  # metadata key: "allow_session" approves for the session
# pegboard validates against the tool's own schema (with its error and signature), so the
# framework only checks that the arguments are an object.
_OBJECT = SchemaValidator(
    core_schema.dict_schema(
        keys_schema=core_schema.str_schema(), values_schema=core_schema.any_schema()
    )
)


class PegboardToolset(AbstractToolset[Any]):
    """The pegboard registry as a pydantic-ai toolset.

    No arguments: the default config and profile, as ``pegboard serve`` uses them (its MCP
    catalog runs while the agent run does); ``profile="work"`` picks another profile,
    ``config`` another file; or ``registry=`` (and ``scope=``) a registry of your own.
    ``context_window`` is used when the model's profile does not know its own.
    ``max_retries`` bounds the retries of a call with invalid arguments.
    """

    def __init__(
        self,
        profile: str | None = None,
        *,
        max_retries: int = 2,
        id: str | None = None,
        **options: Unpack[SourceOptions],
    ) -> None:
        self.bridge = ToolBridge.open(profile, **options)
        self.max_retries = max_retries
        self._id = id
        self._listing: Listing | None = None  # the run step's listing (see for_run)
        self._running: AbstractAsyncContextManager[ToolBridge] | None = None

    @property
    def id(self) -> str | None:
        return self._id

    async def for_run(self, ctx: RunContext[Any]) -> PegboardToolset:
        """A copy per agent run (same bridge: session, grants, catalog), so that concurrent
        runs resolve their calls against their own listing."""
        run = copy.copy(self)
        run._listing, run._running = None, None
        return run

    async def __aenter__(self) -> PegboardToolset:
        running = self.bridge.running()
        await running.__aenter__()
        self._running = running
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        running, self._running = self._running, None
        if running is not None:
            await running.__aexit__(*args)
        return None

    @property
    def _targets(self) -> dict[str, str]:
        """Call id -> the tool a paused call waits for (shared by the runs of the bridge)."""
        return self.bridge.paused

    def _list(self, ctx: RunContext[Any]) -> Listing:
        window = getattr(ctx.model, "context_window", None)
        self._listing = self.bridge.listing(window if isinstance(window, int) else None)
        return self._listing

    async def get_instructions(self, ctx: RunContext[Any]) -> str | None:
        listing = self._listing or self._list(ctx)
        return listing.prompt_section or None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        listing = self._list(ctx)
        return {
            entry.name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=entry.name,
                    parameters_json_schema=dict(entry.tool.input_schema),
                    description=entry.tool.description,
                    strict=entry.tool.strict,
                ),
                max_retries=self.max_retries,
                args_validator=_OBJECT,
            )
            for entry in listing.shown
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        listing = self._listing or self._list(ctx)
        if tool.tool_def.strict:  # strict mode sends null for an optional property left out
            tool_args = relax_strict_arguments(tool.tool_def.parameters_json_schema, tool_args)
        call_id = ctx.tool_call_id or ""
        self.bridge.require_running(listing, name)  # pydantic-ai enters the toolset for a run
        target = self._targets.pop(call_id, None)
        if not ctx.tool_call_approved:
            target = await self.bridge.pending_gate(listing, name, tool_args, call_id)
            if target is not None:
                self._targets[call_id] = target
                raise ApprovalRequired(metadata={"tool": target, "via": "pegboard"})
        meta = ctx.tool_call_metadata or {}
        decision: Decision = (
            "allow_session" if meta.get(DECISION) == "allow_session" else "allow_once"
        )
        approved = FrameworkApproval(target or name, ctx.tool_call_approved, decision)
        try:
            output = await self.bridge.call(
                listing,
                name,
                tool_args,
                call_id,
                via=VIA,
                approved=approved,
                raising=(InvalidToolArguments,),
            )
        except InvalidToolArguments as exc:
            raise ModelRetry(error_output(exc, listing.lookup).as_text()) from exc
        return result_text(output)

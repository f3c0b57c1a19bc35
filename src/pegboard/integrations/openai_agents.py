"""pegboard's tools as OpenAI Agents SDK function tools::

    from agents import Agent, Runner
    from pegboard.integrations.openai_agents import pegboard_tools

    tools = pegboard_tools()
    async with tools:                       # runs the config's MCP servers
        agent = Agent(name="a", instructions=base + tools.instructions, tools=tools)
        result = await Runner.run(agent, "...")
        while result.interruptions:         # a gated call waits for a human
            state = result.to_state()
            for item in result.interruptions:
                state.approve(item)         # or state.reject(item)
            result = await Runner.run(agent, state)

The listing is deferred for the context window once, when the tools are built: the deferred
pool is reached through ``tool_search`` / ``tool_inspect`` / ``tool_invoke``. Schemas are sent
strict where pegboard's strict-mode rewriting can express them (the nulls strict mode sends for
optional properties are removed again before validation), as they are otherwise. A gated
call sets ``needs_approval``, so the run is interrupted; the call then runs through pegboard's
authorisation with the approval the SDK recorded for that very call.
"""

from __future__ import annotations

from typing import Any, Unpack

from pegboard.calls.approval import may_need_approval
from pegboard.core.entry import ToolEntry
from pegboard.deferral.definitions import TOOL_INVOKE
from pegboard.errors import OptionalDependencyMissing, SchemaError
from pegboard.formats.calls import ToolCall
from pegboard.formats.strict import openai_strict_schema, relax_strict_arguments
from pegboard.integrations.bridge import FrameworkApproval, Listing, SourceOptions, ToolBridge
from pegboard.integrations.listed import BridgedTools, bridged_tools, result_text

try:
    from agents import FunctionTool, RunContextWrapper
    from agents.tool_context import ToolContext
except ImportError as exc:  # no extra: see tests/integrations/test_imports.py
    raise OptionalDependencyMissing("pegboard.integrations.openai_agents", "agents") from exc

__all__ = ["pegboard_tools"]

VIA = "openai_agents"


def pegboard_tools(
    profile: str | None = None, **options: Unpack[SourceOptions]
) -> BridgedTools[FunctionTool]:
    """The profile's tools (default config and profile, like ``pegboard serve``; or
    ``registry=`` and ``scope=``; see :meth:`ToolBridge.open`) as Agents SDK
    :class:`~agents.FunctionTool` objects."""
    return bridged_tools(_function_tool, profile, options)


def _function_tool(bridge: ToolBridge, listing: Listing, entry: ToolEntry) -> FunctionTool:
    name, schema = entry.name, entry.tool.input_schema
    try:
        params, strict = openai_strict_schema(schema, tool_name=name), True
    except SchemaError:  # free-form objects and the like: sent as they are
        params, strict = dict(schema), False

    def arguments(parsed: dict[str, Any]) -> dict[str, Any]:
        return relax_strict_arguments(schema, parsed) if strict else parsed

    targets: dict[str, str] = {}  # call id -> the tool the run was interrupted for

    async def invoke(ctx: ToolContext[Any], raw: str) -> str:
        call = ToolCall.parse(ctx.tool_call_id, name, raw)
        approved = ctx.is_tool_approved(name, ctx.tool_call_id) is True
        bridge.require_running(listing, name)  # misuse: raised to the application
        target = targets.pop(call.id, name)
        always = approved and _always_approved(ctx, name, call.id)
        answer = FrameworkApproval(target, approved, "allow_session" if always else "allow_once")
        output = await bridge.call(
            listing,
            name,
            arguments(call.arguments),
            call.id,
            via=VIA,
            approved=answer,
            unparsable=call.parse_error,
        )
        return result_text(output)

    async def needs_approval(_ctx: RunContextWrapper[Any], given: dict[str, Any], id: str) -> bool:
        target = await bridge.pending_gate(listing, name, arguments(given), id)
        if target is not None:
            targets[id] = target
        return target is not None

    gated = may_need_approval(entry.tool) or name == TOOL_INVOKE
    return FunctionTool(
        name=name,
        description=entry.tool.description,
        params_json_schema=params,
        on_invoke_tool=invoke,
        strict_json_schema=strict,
        needs_approval=needs_approval if gated else False,
    )


def _always_approved(ctx: ToolContext[Any], name: str, call_id: str) -> bool:
    """Whether the application approved ``name`` for every call (``state.approve(item,
    always_approve=True)``): pegboard then grants this exact call for the session. The SDK
    keeps that as a record whose ``approved`` is True rather than a list of call ids."""
    records = getattr(ctx, "_approval_records_for_key", None)
    if records is None:
        return False
    return any(getattr(r, "approved", None) is True for r in records(name, call_id=call_id))

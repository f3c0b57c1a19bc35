"""pegboard's tools as LangChain structured tools::

    from pegboard.integrations.langchain import pegboard_langchain_tools

    tools = pegboard_langchain_tools()
    async with tools:                       # runs the config's MCP servers
        model = ChatOpenAI(...).bind_tools(tools)
        ...                                 # messages.append(await tool.ainvoke(tool_call))

Each tool's ``args_schema`` is its JSON Schema as it is (a dict: no conversion to a pydantic
model that could lose keywords); pegboard validates the arguments. The listing is deferred once,
when the tools are built (``tools.instructions`` is the system-prompt section). LangChain has
no approval step of its own: with ``approval_handler`` (a :class:`~pegboard.calls.ApprovalHandler`)
a gated call asks it, as :func:`~pegboard.agent.build_agent_params` does; with
``interrupt=True`` (inside a LangGraph graph with a checkpointer) it pauses the graph with
LangGraph's ``interrupt({"tool", "arguments"})``, and ``Command(resume=True)`` approves it
(``Command(resume="allow_session")`` for the rest of the session; any other value refuses);
without either the agent gets an explicit error saying the call needs approval and did not
run.

Tools run async (``ainvoke``) and sync (``invoke``, from a thread without an event loop; MCP
tools need the async form, since their connections live on the catalog's loop).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import partial
from typing import Any, Unpack

import anyio

from pegboard.calls.approval import ApprovalHandler, Decision
from pegboard.core.entry import ToolEntry
from pegboard.errors import OptionalDependencyMissing
from pegboard.integrations.bridge import FrameworkApproval, Listing, SourceOptions, ToolBridge
from pegboard.integrations.listed import BridgedTools, bridged_tools, result_text

try:
    from langchain_core.tools import StructuredTool
except ImportError as exc:  # no extra: see tests/integrations/test_imports.py
    raise OptionalDependencyMissing("pegboard.integrations.langchain", "langchain") from exc

__all__ = ["pegboard_langchain_tools"]

VIA = "langchain"


def pegboard_langchain_tools(
    profile: str | None = None,
    *,
    approval_handler: ApprovalHandler | None = None,
    interrupt: bool = False,
    **options: Unpack[SourceOptions],
) -> BridgedTools[StructuredTool]:
    """The profile's tools (default config and profile, like ``pegboard serve``; or
    ``registry=`` and ``scope=``; see :meth:`ToolBridge.open`) as LangChain
    :class:`~langchain_core.tools.StructuredTool` objects."""
    pause = _langgraph_interrupt() if interrupt else None
    return bridged_tools(partial(_tool, approval_handler, pause), profile, options)


def _langgraph_interrupt() -> Callable[[Any], Any]:
    try:
        from langgraph.types import interrupt
    except ImportError as exc:
        raise ImportError(
            "pegboard_langchain_tools(interrupt=True) needs LangGraph: pip install langgraph"
        ) from exc
    return interrupt


def _tool(
    handler: ApprovalHandler | None,
    pause: Callable[[Any], Any] | None,
    bridge: ToolBridge,
    listing: Listing,
    entry: ToolEntry,
) -> StructuredTool:
    name = entry.name

    async def acall(**arguments: Any) -> str:
        # LangChain does not hand the model's call id to the function: a fresh one per call.
        call_id = f"lc_{uuid.uuid4().hex[:16]}"
        bridge.require_running(listing, name)  # misuse: raised to the application
        approved = None
        if pause is not None:
            target = await bridge.pending_gate(listing, name, arguments, call_id)
            if target is not None:
                # The first time, this ends the graph step; on resume it returns the answer
                # (True, or "allow_session") and the tool runs again from the top.
                answer = pause({"tool": target, "arguments": arguments})
                decision: Decision = "allow_session" if answer == "allow_session" else "allow_once"
                approved = FrameworkApproval(target, answer in (True, "allow_session"), decision)
        output = await bridge.call(
            listing, name, arguments, call_id, via=VIA, approved=approved, handler=handler
        )
        return result_text(output)

    def call(**arguments: Any) -> str:
        return anyio.run(partial(acall, **arguments))

    return StructuredTool.from_function(
        func=call,
        coroutine=acall,
        name=name,
        description=entry.tool.description,
        args_schema=dict(entry.tool.input_schema),
        infer_schema=False,
    )

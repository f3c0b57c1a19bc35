"""A framework's tools as a list that also carries the bridge, and the text a model reads.

The Agents SDK and LangChain take tools as a list: :func:`bridged_tools` builds one tool per
listed entry and returns a :class:`BridgedTools`, a list that also holds the deferred-tools
prompt section and runs the config's MCP catalog as an async context manager.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from pegboard.core.entry import ToolEntry
from pegboard.core.output import ToolOutput
from pegboard.formats.openai import chat_tool_result
from pegboard.integrations.bridge import Listing, SourceOptions, ToolBridge

T = TypeVar("T")


class BridgedTools(list[T], Generic[T]):
    """A framework's tools (a plain list) that also carry what goes with them.

    ``instructions`` is the deferred-tools section for the system prompt ("" when nothing is
    deferred). ``async with tools:`` runs the MCP catalog behind a config's tools while the
    agent runs (a registry of your own needs nothing running).
    """

    def __init__(self, items: list[T], bridge: ToolBridge, listing: Listing) -> None:
        super().__init__(items)
        self.bridge = bridge
        self.listing = listing
        self.instructions = listing.prompt_section
        self._running: Any = None

    async def __aenter__(self) -> BridgedTools[T]:
        self._running = self.bridge.running()
        await self._running.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        running, self._running = self._running, None
        if running is not None:
            await running.__aexit__(*exc)


def bridged_tools(
    make: Callable[[ToolBridge, Listing, ToolEntry], T],
    profile: str | None,
    options: SourceOptions,
) -> BridgedTools[T]:
    """One framework tool per listed entry (``make``), deferred once, when built."""
    bridge = ToolBridge.open(profile, **options)
    listing = bridge.listing()
    return BridgedTools([make(bridge, listing, e) for e in listing.shown], bridge, listing)


def result_text(output: ToolOutput) -> str:
    """The text a model gets for ``output``: what the dispatcher sends as a Chat tool message
    (an error prefixed ``Error:``), so every route reads the same."""
    content: str = chat_tool_result("", output)["content"]
    return content

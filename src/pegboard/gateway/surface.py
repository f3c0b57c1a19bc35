"""What ``pegboard serve`` exposes: the contract between the MCP server and the tool runtime."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pegboard.calls.approval import ApprovalHandler
from pegboard.core.access import AccessView
from pegboard.core.output import ToolOutput
from pegboard.core.principal import Principal
from pegboard.core.scope import GateReason
from pegboard.toolsets.exposure import ChangeListener

if TYPE_CHECKING:
    import mcp_types


class ToolSurface(Protocol):
    """The tool list, the instructions and the calls one MCP client sees.

    ``list_tools`` and ``instructions`` must answer from memory (never wait on an upstream
    server); ``subscribe`` listeners run on the event loop whenever ``list_tools`` changes.
    ``session_id`` names that client's connection: the session its "allow for this session"
    grants are scoped to, and its audit records.
    """

    def list_tools(self, access: AccessView | None = None) -> Sequence[mcp_types.Tool]:
        """The list (as the principals of ``access`` see it, when given)."""
        ...

    def list_tools_json(self, access: AccessView | None = None) -> list[dict[str, Any]]:
        """The same list as MCP ``Tool`` JSON (the wire shape), built without the SDK."""
        ...

    def instructions(self, access: AccessView | None = None) -> str | None: ...

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        call_id: str,
        approval: ApprovalHandler | None,
        session_id: str | None = None,
        client: str | None = None,
        principal: Principal | None = None,
        grant_ttl: float | None = None,
        access: AccessView | None = None,
    ) -> ToolOutput: ...

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]: ...

    def gate_reason(self, name: str) -> GateReason:
        """Why the tool ``name`` asks for approval (which config change lets it run unasked)."""
        ...

"""A stdio MCP server built with the official SDK's ``MCPServer``.

    python modern.py [--modern-only]

By default it serves both eras, as every SDK 2.x server does: the handshake era to a client
that opens with ``initialize``, 2026-07-28 to one that opens with ``server/discover``. With
``--modern-only`` it refuses ``initialize`` as a 2026-07-28-only server does (-32022 naming
its versions), so a client must discover.

Tools: ``version`` (the protocol version of the request), ``echo(text)``, ``spare``,
``drop_tool(name)`` and ``confirm`` (asks for input: an ``InputRequiredResult`` with a form
elicitation, as a tool that needs the user does). ``drop_tool`` removes tool ``name`` (a
removal, which reaches clients at once; a new tool would wait for `pegboard tools trust`)
and announces it the way each kind of server does: ``notifications/tools/list_changed`` on
its session (a server written for the handshake era; the SDK drops this on a 2026-07-28
connection), and, modern-only, on its ``subscriptions/listen`` streams
(``ctx.notify_tools_changed``, the only 2026-07-28 way). Prompt ``hello(name)``.
"""

from __future__ import annotations

import sys

import anyio
import mcp_types
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

MODERN_ONLY = "--modern-only" in sys.argv[1:]
server = MCPServer("modern")


@server.tool()
def version(ctx: Context) -> str:
    """The protocol version of this request."""
    return str(ctx.protocol_version)


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def spare() -> str:
    """A tool that ``drop_tool`` can remove."""
    return "spare"


@server.tool()
async def drop_tool(name: str, ctx: Context) -> str:
    """Remove the tool called NAME and announce the change."""
    server.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    if MODERN_ONLY:
        await ctx.notify_tools_changed()
    return "dropped"


@server.tool()
def confirm() -> mcp_types.InputRequiredResult:
    """Ask the user to confirm, in an input-required round."""
    schema: mcp_types.ElicitRequestedSchema = {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
    }
    ask = mcp_types.ElicitRequestFormParams(message="Sure?", requested_schema=schema)
    return mcp_types.InputRequiredResult(
        input_requests={"sure": mcp_types.ElicitRequest(params=ask)}, request_state="asked"
    )


@server.prompt()
def hello(name: str) -> str:
    """A greeting (content the gateway lists in the server's era)."""
    return f"Hello {name}"


async def serve_modern_only() -> None:
    """Serve stdio, answering every ``initialize`` with -32022 before the SDK sees it (the
    SDK's loop then opens the 2026-07-28 era on the client's first enveloped request)."""
    lowlevel = server._lowlevel_server  # the SDK's stdio runner, fed through our filter
    async with stdio_server() as (read, write):
        inner_send, inner_read = anyio.create_memory_object_stream[SessionMessage | Exception](16)

        async def refuse_handshake() -> None:
            async with inner_send:
                async for item in read:
                    message = item.message if isinstance(item, SessionMessage) else None
                    if isinstance(message, mcp_types.JSONRPCRequest) and (
                        message.method == "initialize"
                    ):
                        error = mcp_types.ErrorData(
                            code=mcp_types.UNSUPPORTED_PROTOCOL_VERSION,
                            message="this server speaks only 2026-07-28; use server/discover",
                            data={"supported": list(MODERN_PROTOCOL_VERSIONS)},
                        )
                        refusal = mcp_types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
                        await write.send(SessionMessage(refusal))
                    else:
                        await inner_send.send(item)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(refuse_handshake)
            await lowlevel.run(inner_read, write, lowlevel.create_initialization_options())
            tasks.cancel_scope.cancel()


if __name__ == "__main__":
    if MODERN_ONLY:
        anyio.run(serve_modern_only)
    else:
        server.run("stdio")

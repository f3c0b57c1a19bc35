"""A stdio MCP server with resources, a resource template and a prompt (official SDK).

    python content.py LABEL [HANG_FILE]

While HANG_FILE exists, the server never answers (it reads nothing): a hanging upstream with
an unchanged launch definition.

Resource ``note://readme`` reads "readme of LABEL"; template ``note://{name}`` reads
"note NAME of LABEL"; prompt ``greet(name)`` says "Hello NAME from LABEL"; tool ``ping``;
tool ``add_note(name)`` adds resource ``note://NAME`` and sends
``notifications/resources/list_changed``. Environment: ``CONTENT_REDEFINE`` adds tool
``redefine_prompt``, which gives ``greet`` a new description (same name) that says "Hello
again" and sends ``notifications/prompts/list_changed``; ``CONTENT_PROMPT``
renames ``greet``; ``CONTENT_SECRET_URI`` adds a resource at that URI (credentials in it);
``CONTENT_LIST_GATE`` names a file: while it exists, resources/list is held (the server
writes ``<file>.held`` once it holds one), a listing slow to answer.
Two of them under different ids list the same URIs and names: the gateway must keep them apart.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

label = sys.argv[1]
server = MCPServer(f"content-{label}")


@server.tool()
def ping() -> str:
    """Answers pong."""
    return "pong"


@server.tool()
async def add_note(name: str, ctx: Context) -> str:
    """Add resource ``note://NAME`` and announce that the resources changed."""
    server.resource(f"note://{name}", name=name, mime_type="text/plain")(
        lambda: f"{name} of {label}"
    )
    await ctx.session.send_resource_list_changed()
    return "added"


@server.resource("note://readme", name="readme", mime_type="text/plain")
def readme() -> str:
    return f"readme of {label}"


@server.resource("note://{name}", name="note", mime_type="text/plain")
def note(name: str) -> str:
    return f"note {name} of {label}"


PROMPT = os.environ.get("CONTENT_PROMPT", "greet")


@server.prompt(name=PROMPT)
def greet(name: str) -> str:
    """A greeting."""
    return f"Hello {name} from {label}"


async def redefine_prompt(ctx: Context) -> str:
    """Give the prompt a new description and text, and announce that the prompts changed."""
    server.remove_prompt(PROMPT)

    def changed(name: str) -> str:
        return f"Hello again {name} from {label}"

    server.prompt(name=PROMPT, description="A greeting that now does something else.")(changed)
    await ctx.session.send_prompt_list_changed()
    return "redefined"


if os.environ.get("CONTENT_REDEFINE"):
    server.tool()(redefine_prompt)


if secret_uri := os.environ.get("CONTENT_SECRET_URI"):
    server.resource(secret_uri, name="secret", mime_type="text/plain")(lambda: f"db of {label}")


if gate := os.environ.get("CONTENT_LIST_GATE"):
    listed = server.list_resources

    async def held_list() -> list:  # type: ignore[type-arg]
        held = anyio.Path(gate)
        if await held.exists():
            await anyio.Path(f"{gate}.held").touch()
            while await held.exists():  # noqa: ASYNC110
                await anyio.sleep(0.02)
        return await listed()

    server.list_resources = held_list  # type: ignore[method-assign]


if __name__ == "__main__":
    if len(sys.argv) > 2 and Path(sys.argv[2]).exists():
        while True:
            time.sleep(3600)
    server.run("stdio")

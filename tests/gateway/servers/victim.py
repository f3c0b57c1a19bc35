"""A stdio MCP server for kill-mid-call and deferral tests.

    python victim.py [--tools N]

``pid()`` returns the process id; ``block(fifo)`` opens ``fifo`` for writing (which returns
once the test opens it for reading, proving the call is in flight) and then never returns.
``--tools N`` adds N tools ``task_<i>`` with distinct, realistic descriptions, so a gateway with
a small context window defers them.
"""

from __future__ import annotations

import argparse
import os

import anyio
from mcp.server import MCPServer

server = MCPServer("victim")


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
async def block(fifo: str) -> str:
    """Signal through ``fifo`` that the call started, then wait forever."""

    def signal() -> None:
        with open(fifo, "w", encoding="utf-8") as pipe:
            pipe.write("started\n")

    await anyio.to_thread.run_sync(signal)
    await anyio.sleep_forever()
    return "unreachable"


TOPICS = [
    "Look up the weather forecast for a city and return temperature and rain chance",
    "Send an email message to a list of recipients with a subject and a body",
    "Create a calendar event with a title, start time, duration and attendees",
    "Search files on the local disk by name pattern and return matching paths",
    "Translate a text between two languages and return the translation",
    "Convert an amount of money between two currencies at today's rate",
]


def add_generated(count: int) -> None:
    def make(i: int) -> None:
        def generated(query: str, limit: int = 10) -> str:
            return f"task_{i}:{query}:{limit}"

        topic = TOPICS[i % len(TOPICS)]
        server.add_tool(generated, name=f"task_{i}", description=f"{topic} (variant {i}).")

    for i in range(count):
        make(i)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=0)
    add_generated(parser.parse_args().tools)
    server.run("stdio")

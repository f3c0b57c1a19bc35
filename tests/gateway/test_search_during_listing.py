"""A ``tool_search`` sent while an upstream is being re-listed is answered from the cached
catalog: the listing's checks run off the event loop, and the search waits for none of it."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from mcp import Client

from pegboard.gateway.server import Gateway
from pegboard.mcp import checked
from pegboard.mcp.checked import CheckedDefinitions
from tests.gateway.harness import STARTUP_BOUND, text_of
from tests.toolsets.test_routes import DEFERRED, config, runtime_of

pytestmark = pytest.mark.anyio
__all__ = ["config"]  # the fixture: a 30-tool SDK server, refreshed into the cache, deferred

HOLD_S = 20.0


class HeldChecks(CheckedDefinitions):
    """The process's table of passes, holding the first listing check until released."""

    def __init__(self, order: list[str]) -> None:
        super().__init__()
        self.order = order
        self.held = threading.Event()
        self.release = threading.Event()

    def passed(self, digest: bytes) -> bool:
        if not self.held.is_set():
            self.order.append("listing held")
            self.held.set()
            self.release.wait(HOLD_S)  # bounded: the old code holds the loop until then
            self.order.append("listing released")
        return super().passed(digest)


async def test_a_search_during_a_re_listing_is_answered_before_the_listing_ends(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[str] = []
    probe = HeldChecks(order)
    monkeypatch.setattr(checked, "_default", probe)

    with anyio.fail_after(STARTUP_BOUND + HOLD_S):
        async with runtime_of(config, []) as runtime:  # starts re-listing the server
            assert await anyio.to_thread.run_sync(probe.held.wait, STARTUP_BOUND)
            async with Client(Gateway(runtime.surface).server, mode="legacy") as client:
                found = await client.call_tool("tool_search", {"query": "add two numbers"})
                order.append("search answered")
            probe.release.set()
            await runtime.catalog.refresh_tools("toolbox")  # the listing goes on to its end

    assert order == ["listing held", "search answered", "listing released"]
    assert DEFERRED in text_of(found)

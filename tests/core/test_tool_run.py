"""How a tool's executor is run: a sync one in a worker thread, never on the event loop."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pegboard import (
    ModelInfo,
    Tool,
    ToolApplyScope,
    ToolCall,
    ToolContext,
    ToolEntry,
    ToolRegistry,
    build_agent_params,
)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("how", ["from_function", "plain executor"])
async def test_a_sync_tool_runs_in_a_worker_thread_while_the_loop_runs_other_calls(
    how: str,
) -> None:
    loop_thread = threading.get_ident()
    released = threading.Event()
    threads: list[int] = []

    def wait_for_release() -> str:
        """Block until another call releases this one."""
        threads.append(threading.get_ident())
        # On the loop, the releasing call could not run: the wait would time out instead.
        return "released" if released.wait(timeout=5) else "the event loop was blocked"

    async def release(args: dict[str, Any], ctx: ToolContext) -> str:
        released.set()
        return "done"

    def executor(args: dict[str, Any], ctx: ToolContext) -> str:
        return wait_for_release()

    waiting = (
        Tool.from_function(wait_for_release)
        if how == "from_function"
        else Tool(description="Block until released.", execute=executor)
    )
    registry = ToolRegistry(
        [
            ToolEntry("wait", "t", waiting),
            ToolEntry("release", "t", Tool(description="Release.", execute=release)),
        ]
    )
    params = build_agent_params(registry, ToolApplyScope(), ModelInfo("m", "openai", None))

    outputs = await params.dispatcher.run([ToolCall("c1", "wait"), ToolCall("c2", "release")])

    assert [o.as_text() for o in outputs] == ["released", "done"]
    assert len(threads) == 1
    assert threads[0] != loop_thread

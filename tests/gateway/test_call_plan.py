"""The per-tool call plans of ``pegboard serve`` (:mod:`pegboard.toolsets.plan`): whatever
changes between two calls of a tool takes effect on the very next call, on the stdio fast
path (a raw client without elicitation) with a real upstream server.

Each test first calls the tool once (its plan is made then), changes one thing (a grant, an
approval gate, the upstream's catalog, an access rule), and calls it again.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import tomli_w

from pegboard.config import load_config
from pegboard.core.access import AccessPolicy, AccessRule, AccessViews
from pegboard.core.principal import Principal
from pegboard.runtime import RuntimeOptions, ToolRuntime
from tests.gateway.harness import (
    PEGBOARD,
    STARTUP_BOUND,
    Lines,
    gateway_env,
    run_cli,
    scripted_server,
    write_config,
)

pytestmark = pytest.mark.anyio

TOOL = "mcp__box__tool_0"
CHANGED = "notifications/tools/list_changed"


def _box(tmp_path: Path, *args: str, **extra: Any) -> dict[str, Any]:
    server = scripted_server("--call-log", str(tmp_path / "calls"), *args)
    return {"servers": {"box": server | extra}}


def _called(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls"
    return log.read_text().splitlines() if log.exists() else []


class Wire(Lines):
    """The raw wire, numbering its own requests and noting the gateway's list changes."""

    def __init__(self, process: Any) -> None:
        super().__init__(process)
        self._next = 10
        self._changes = 0  # list_changed notifications read and not yet waited for

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        await self.send({"id": self._next, "method": method, "params": params})
        while True:
            message = await self.next()
            if message.get("method") == CHANGED:
                self._changes += 1
            elif message.get("id") == self._next and "method" not in message:
                result: dict[str, Any] = message["result"]
                return result

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.request("tools/call", {"name": name, "arguments": arguments})

    async def listed_until(self, holds: Callable[[list[str]], bool]) -> None:
        """List the tools after each list change the gateway announces until ``holds`` says
        the change waited for is there (an earlier change, such as the start's, may come
        first)."""
        while True:
            self._changes = 0
            listed = await self.request("tools/list", {})
            if holds([tool["name"] for tool in listed["tools"]]):
                return
            while not self._changes:
                message = await self.next()
                if message.get("method") == CHANGED:
                    self._changes += 1


def _text(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"])


@asynccontextmanager
async def _serving(tmp_path: Path, config: dict[str, Any]) -> AsyncIterator[Wire]:
    """``pegboard serve`` of ``config`` (its upstream listed into the cache first), its
    handshake done, on a raw wire."""
    write_config(tmp_path, config)
    await run_cli(tmp_path, "servers", "refresh")
    args = [PEGBOARD, "serve", "--no-defer"]
    async with await anyio.open_process(args, env=gateway_env(tmp_path)) as process:
        wire = Wire(process)
        await wire.start()
        yield wire


async def test_a_gated_call_approved_between_two_calls_runs_on_the_next_and_only_once(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(STARTUP_BOUND):
        async with _serving(tmp_path, _box(tmp_path, force_prompt_tools=["tool_0"])) as wire:
            queued = await wire.call(TOOL, {"q": "a"})
            asked = re.search(r"\(request ([0-9a-f]{8})\)", _text(queued))
            assert asked is not None, _text(queued)
            code, _, err = await run_cli(tmp_path, "approvals", "approve", asked.group(1))
            assert code == 0, err
            approved = await wire.call(TOOL, {"q": "a"})
            used_up = await wire.call(TOOL, {"q": "a"})

    assert queued["isError"] is True
    assert approved == {
        "content": [{"type": "text", "text": 'tool_0:{"q": "a"}'}],
        "isError": False,
    }
    assert used_up["isError"] is True
    assert "waits in pegboard's approvals queue" in _text(used_up)
    assert _called(tmp_path) == ["tool_0"]


async def test_a_gate_added_to_the_config_between_two_calls_holds_the_next_call(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(STARTUP_BOUND):
        async with _serving(tmp_path, _box(tmp_path)) as wire:
            ran = await wire.call(TOOL, {"q": "a"})
            # the gate, and a disabled tool so that the listing visibly changes
            gated = _box(tmp_path, force_prompt_tools=["tool_0"], disabled_tools=["tool_2"])
            (tmp_path / "config.toml").write_text(tomli_w.dumps(gated), encoding="utf-8")
            await wire.listed_until(lambda names: "mcp__box__tool_2" not in names)
            held = await wire.call(TOOL, {"q": "a"})

    assert ran["isError"] is False
    assert held["isError"] is True
    assert f"Tool {TOOL} needs a person's approval" in _text(held)
    assert _called(tmp_path) == ["tool_0"]


async def test_a_tool_whose_schema_changed_or_that_left_upstream_is_refused_on_the_next_call(
    tmp_path: Path,
) -> None:
    modes = tmp_path / "modes"
    args = ("--names", "tool_0,announce", "--mode-file", str(modes))
    with anyio.fail_after(STARTUP_BOUND):
        async with _serving(tmp_path, _box(tmp_path, *args)) as wire:
            ran = await wire.call(TOOL, {"q": "a"})
            modes.write_text("integer-q")  # the upstream redefines tool_0 and says so
            await wire.call("mcp__box__announce", {})
            await wire.listed_until(lambda names: TOOL not in names)  # held until trusted
            redefined = await wire.call(TOOL, {"q": "a"})
            modes.write_text("no-tools")
            await wire.call("mcp__box__announce", {})
            await wire.listed_until(lambda names: names == [])
            removed = await wire.call(TOOL, {"q": 1})

    assert ran["isError"] is False
    assert redefined["isError"] is True
    assert removed["isError"] is True
    # held until trusted (a changed definition), then gone
    assert _text(redefined) == f"Tool not found: {TOOL}. Did you mean: mcp__box__announce?"
    assert _text(removed) == f"Tool not found: {TOOL}."
    assert _called(tmp_path) == ["tool_0", "announce", "announce"]


async def test_an_access_rule_changed_between_two_calls_takes_effect_on_the_next_call(
    tmp_path: Path,
) -> None:
    """Access rules govern principals other than the stdio user (HTTP clients): the
    runtime's surface called as ``alice`` under one view, then under the view of changed
    rules (a new policy), then the first again."""
    config = write_config(tmp_path, {"data_dir": str(tmp_path / "data")} | _box(tmp_path))
    await run_cli(tmp_path, "servers", "refresh")
    runtime = ToolRuntime(load_config(config), RuntimeOptions(prewarm=False))
    alice = Principal("alice")
    everything = AccessViews(AccessPolicy((AccessRule(("alice",)),))).of(alice)
    others = AccessViews(AccessPolicy((AccessRule(("alice",), tools=("tool_1",)),))).of(alice)

    async def call(view: Any, call_id: str) -> str:
        output = await runtime.surface.call_tool(
            TOOL, {"q": "a"}, call_id=call_id, approval=None, principal=alice, access=view
        )
        return ("error: " if output.is_error else "") + output.as_text()

    with anyio.fail_after(STARTUP_BOUND):
        async with runtime.running():
            answers = [
                await call(everything, "1"),
                await call(others, "2"),
                await call(everything, "3"),
            ]

    ran = 'tool_0:{"q": "a"}'
    refused = f"error: Tool not found: {TOOL}. Did you mean: mcp__box__tool_1?"
    assert answers == [ran, refused, ran]
    assert _called(tmp_path) == ["tool_0", "tool_0"]

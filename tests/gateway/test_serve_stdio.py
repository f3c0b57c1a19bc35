"""``pegboard serve`` over stdio, driven by the official SDK client, with real upstream servers."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import anyio
import mcp_types
import pytest

from tests.gateway.harness import (
    PEGBOARD,
    STARTUP_BOUND,
    Notifications,
    RawRpc,
    gateway_env,
    process_gone,
    run_cli,
    scripted_elicitation,
    scripted_server,
    sdk_server,
    serve_stdio,
    text_of,
    victim_server,
    wait_for_list,
    wait_for_tools,
    write_config,
)

pytestmark = pytest.mark.anyio


async def test_cached_tools_are_served_while_a_server_hangs_and_tool_invoke_reaches_a_real_tool(
    tmp_path: Path,
) -> None:
    hang = scripted_server("--mode", "no-init") | {"connect_timeout": 120}
    write_config(
        tmp_path,
        {
            "servers": {
                "toolbox": sdk_server(),
                "bulk": victim_server("--tools", "30"),
                "hang": hang,
            }
        },
    )
    code, out, _ = await run_cli(tmp_path, "servers", "refresh", "toolbox", "bulk")
    assert (code, out.splitlines()[0].split(":")[0]) == (0, "toolbox")

    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path, "--context-window", "8000") as client:
            listed = await client.list_tools()
            instructions = client.instructions or ""

            assert [t.name for t in listed.tools] == ["tool_inspect", "tool_invoke", "tool_search"]
            assert (
                "- mcp:bulk (32): mcp__bulk__block, mcp__bulk__pid, mcp__bulk__task_0, "
                "mcp__bulk__task_1, …"
            ) in instructions
            # the toolbox is the catalog tests' server: its tool count may grow
            assert re.search(
                r"^- mcp:toolbox \(\d+\): mcp__toolbox__add, ", instructions, re.MULTILINE
            )
            assert re.search(
                r"^- mcp:hang: server (connecting|not connected yet); its tools may be missing$",
                instructions,
                re.MULTILINE,
            )
            # the cached servers are not started yet either, but their tools are served
            assert "mcp:bulk:" not in instructions
            assert "mcp:toolbox:" not in instructions

            found = text_of(await client.call_tool("tool_search", {"query": "add two integers"}))
            assert found.splitlines()[:2] == [
                "[mcp:toolbox]",
                "- mcp__toolbox__add: Add two integers.",
            ]

            stub = text_of(await client.call_tool("tool_inspect", {"name": "mcp__toolbox__add"}))
            assert " * @param {integer} params.a (required)" in stub.splitlines()

            result = await client.call_tool(
                "tool_invoke", {"name": "mcp__toolbox__add", "params": {"a": 2, "b": 3}}
            )
            assert (text_of(result), result.structured_content, result.is_error) == (
                "5",
                {"result": 5},
                False,
            )

            media = await client.call_tool("tool_invoke", {"name": "mcp__toolbox__media"})
            kinds = [type(block).__name__ for block in media.content]
            assert kinds == ["TextContent", "ImageContent", "AudioContent", "EmbeddedResource"]

            failed = await client.call_tool(
                "tool_invoke", {"name": "mcp__toolbox__fail", "params": {"reason": "no luck"}}
            )
            assert failed.is_error is True
            assert "no luck" in text_of(failed)


async def test_gated_tools_are_asked_by_elicitation_per_arguments_through_tool_invoke_too(
    tmp_path: Path,
) -> None:
    toolbox = sdk_server() | {"force_prompt_tools": ["echo"]}
    write_config(
        tmp_path, {"servers": {"toolbox": toolbox, "bulk": victim_server("--tools", "30")}}
    )
    changes = Notifications()
    answers = ["allow_session", "deny"]
    asked: list[str] = []

    elicit = scripted_elicitation(answers, asked)

    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(
            tmp_path, "--context-window", "8000", elicitation=elicit, notifications=changes
        ) as client:
            names = await wait_for_tools(client, changes, "mcp__toolbox__echo", "tool_invoke")
            assert names == ["mcp__toolbox__echo", "tool_inspect", "tool_invoke", "tool_search"]

            via_invoke = await client.call_tool(
                "tool_invoke", {"name": "mcp__toolbox__echo", "params": {"text": "hi"}}
            )
            assert (text_of(via_invoke), via_invoke.is_error) == ("hi", False)
            assert asked[0].startswith("Allow the tool mcp__toolbox__echo (mcp:toolbox) to run?")
            assert '"text": "hi"' in asked[0]

            # Allowed for this session through tool_invoke: the direct call is covered too.
            repeated = await client.call_tool("mcp__toolbox__echo", {"text": "hi"})
            assert (text_of(repeated), len(asked)) == ("hi", 1)

            denied = await client.call_tool("mcp__toolbox__echo", {"text": "again"})
            assert denied.is_error is True
            assert "The user denied the call to mcp__toolbox__echo" in text_of(denied)
            assert len(asked) == 2


async def _waiting_for_trust(tmp_path: Path) -> list[str]:
    code, out, err = await run_cli(tmp_path, "servers", "status", "--json")
    assert code == 0, err
    rows = {row["id"]: row for row in json.loads(out)}
    waiting: list[str] = rows["toolbox"]["waiting_for_trust"]
    return waiting


async def test_upstream_list_changed_a_killed_upstream_and_disabling_a_server_reach_the_client(
    tmp_path: Path,
) -> None:
    write_config(tmp_path, {"servers": {"toolbox": sdk_server(), "victim": victim_server()}})
    changes = Notifications()
    fifo = tmp_path / "started.fifo"
    os.mkfifo(fifo)

    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path, "--no-defer", notifications=changes) as client:
            before = await wait_for_tools(client, changes, "mcp__toolbox__grow", "mcp__victim__pid")
            assert "mcp__toolbox__grown" not in before

            grown = await client.call_tool("mcp__toolbox__grow", {"name": "grown"})
            assert text_of(grown) == "added grown"
            # A tool new since the server was trusted waits for `pegboard tools trust`.
            while "grown" not in await _waiting_for_trust(tmp_path):
                pass  # each round is one CLI run (bounded by fail_after)
            code, _, err = await run_cli(tmp_path, "tools", "trust", "toolbox/grown")
            assert code == 0, err
            count = changes.count
            await client.call_tool("mcp__toolbox__grow", {"name": "grown_later"})
            listed = await wait_for_tools(client, changes, "mcp__toolbox__grown")
            assert changes.count > count
            assert "mcp__toolbox__grown_later" not in listed  # not trusted

            victim_pid = int(text_of(await client.call_tool("mcp__victim__pid", {})))
            results: list[mcp_types.CallToolResult] = []

            async def blocked_call() -> None:
                results.append(await client.call_tool("mcp__victim__block", {"fifo": str(fifo)}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(blocked_call)
                await anyio.to_thread.run_sync(lambda: fifo.read_text())
                os.kill(victim_pid, signal.SIGKILL)

            assert results[0].is_error is True
            assert "MCP server victim is not available" in text_of(results[0])
            still = await client.call_tool("mcp__toolbox__add", {"a": 1, "b": 1})
            assert text_of(still) == "2"

            code, _, _ = await run_cli(tmp_path, "servers", "disable", "victim")
            assert code == 0
            after = await wait_for_list(
                client, changes, lambda names: not any("victim" in n for n in names)
            )
            assert "mcp__toolbox__add" in after


async def test_a_fresh_install_without_config_serves_an_empty_tool_list(tmp_path: Path) -> None:
    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path, mode="legacy") as client:
            listed = await client.list_tools()
            instructions = client.instructions

    assert (listed.tools, instructions) == ([], None)


async def test_eof_on_stdin_stops_the_gateway_and_every_upstream_process(tmp_path: Path) -> None:
    write_config(tmp_path, {"servers": {"victim": victim_server()}})
    await run_cli(tmp_path, "servers", "refresh")

    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(
            [PEGBOARD, "serve"], env=gateway_env(tmp_path)
        ) as process:
            rpc = RawRpc(process)
            await rpc.initialize()
            answer = await rpc.request("tools/call", {"name": "mcp__victim__pid", "arguments": {}})
            victim_pid = int(answer["result"]["content"][0]["text"])
            assert process.stdin is not None
            await process.stdin.aclose()
            code = await process.wait()

    assert code == 0
    assert process_gone(victim_pid)


async def test_a_chat_models_window_leaves_serve_at_the_default_window(tmp_path: Path) -> None:
    chat_model = {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    servers = {"bulk": victim_server("--tools", "30")}
    write_config(
        tmp_path, {"servers": servers, "models": {"local": chat_model | {"context_window": 8000}}}
    )
    code, _, _ = await run_cli(tmp_path, "servers", "refresh")
    assert code == 0

    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path) as client:
            inline = [t.name for t in (await client.list_tools()).tools]
        # the same window at the top level is the gateway's: tools are deferred
        write_config(tmp_path, {"servers": servers, "context_window": 8000})
        async with serve_stdio(tmp_path) as client:
            deferred = [t.name for t in (await client.list_tools()).tools]

    assert len(inline) == 32
    assert "tool_search" not in inline
    assert deferred == ["tool_inspect", "tool_invoke", "tool_search"]


async def test_serve_gives_the_heap_freed_by_its_start_and_listings_back(tmp_path: Path) -> None:
    """The trim runs in the serving process (``--log-level debug`` says so); without it the
    heap freed by the start and each listing stays resident (bench/versus.py --only memory)."""
    write_config(tmp_path, {"servers": {"victim": victim_server("--tools", "30")}})
    await run_cli(tmp_path, "servers", "refresh")
    seen: list[str] = []

    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(
            [PEGBOARD, "serve", "--log-level", "debug"], env=gateway_env(tmp_path)
        ) as process:
            assert process.stderr is not None
            stderr = process.stderr

            async def read_stderr() -> None:
                async for chunk in stderr:
                    seen.append(chunk.decode(errors="replace"))
                    if "gave the free heap back" in "".join(seen):
                        return

            rpc = RawRpc(process)
            await rpc.initialize()
            answer = await rpc.request("tools/call", {"name": "mcp__victim__pid", "arguments": {}})
            assert "result" in answer, answer
            await read_stderr()
            assert process.stdin is not None
            await process.stdin.aclose()
            await process.wait()
    assert "pegboard DEBUG pegboard.memory: gave the free heap back" in "".join(seen)

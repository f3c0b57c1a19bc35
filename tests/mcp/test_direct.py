"""tools/call on a stdio server without the SDK's client (pegboard.mcp.direct), against real
scripted servers: pegboard's own ids, answers out of order, the server's requests and
notifications in between, cancellation, an id nobody waits for, a large answer, the switch."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from pegboard.errors import ServerUnavailable
from pegboard.mcp import McpCatalog
from tests.mcp.conftest import scripted
from tests.mcp.listen import on_tools_changed

pytestmark = pytest.mark.anyio


def requests(id_log: Path, method: str) -> list[object]:
    """The ids (parsed) the server saw for ``method``, in order."""
    seen = [line.split(" ", 1) for line in id_log.read_text().splitlines()]
    return [json.loads(rid) for name, rid in seen if name == method]


async def test_calls_go_out_with_pegboards_own_ids_and_the_switch_sends_them_through_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for switch, log in (("", tmp_path / "direct"), ("1", tmp_path / "sdk")):
        monkeypatch.setenv("PEGBOARD_NO_FAST_CALLS", switch)
        catalog = McpCatalog([scripted("s1", tools=1, id_log=log)])
        async with catalog.running(prewarm=False):
            for q in ("a", "b"):
                output = await catalog.call_tool("s1", "tool_0", {"q": q})
                assert output.as_text() == f'tool_0:{{"q": "{q}"}}'
    assert requests(tmp_path / "direct", "tools/call") == ["pegboard-1", "pegboard-2"]
    sdk_ids = requests(tmp_path / "sdk", "tools/call")
    assert len(sdk_ids) == 2
    assert all(isinstance(i, int) for i in sdk_ids)
    assert all(isinstance(i, int) for i in requests(tmp_path / "direct", "tools/list"))


async def test_answers_out_of_order_reach_their_own_calls() -> None:
    catalog = McpCatalog([scripted("s1", "reverse", tools=1)])
    answers: dict[str, str] = {}

    async def call(q: str) -> None:
        answers[q] = (await catalog.call_tool("s1", "tool_0", {"q": q})).as_text()

    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("s1")
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for q in ("one", "two", "three"):
                    tg.start_soon(call, q)
    assert answers == {
        q: json.dumps({"arguments": {"q": q}, "name": "tool_0"}) for q in ("one", "two", "three")
    }


async def test_the_servers_own_request_during_a_call_is_answered_and_the_call_completes(
    tmp_path: Path,
) -> None:
    log = tmp_path / "ids"
    catalog = McpCatalog([scripted("s1", "ping-first", tools=1, id_log=log)])
    async with catalog.running(prewarm=False):
        with anyio.fail_after(10):
            output = await catalog.call_tool("s1", "tool_0", {"q": "after ping"})
    assert output.as_text() == 'tool_0:{"q": "after ping"}'
    assert requests(log, "tools/call") == ["pegboard-1"]


async def test_a_list_change_announced_during_a_call_still_reaches_the_catalog(
    tmp_path: Path,
) -> None:
    modes = tmp_path / "modes"
    catalog = McpCatalog([scripted("s1", tools=1, names="tool_0,announce", mode_file=modes)])
    changed = anyio.Event()
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("s1")
        on_tools_changed(catalog, lambda server_id: changed.set())
        modes.write_text("extra")  # the next listing has one more tool
        output = await catalog.call_tool("s1", "announce", {})
        assert output.as_text() == "announce:{}"
        with anyio.fail_after(10):
            await changed.wait()  # list_changed reached the SDK's session: re-listed, changed


async def test_a_stray_answer_under_pegboards_id_prefix_is_dropped_and_the_call_answered() -> None:
    catalog = McpCatalog([scripted("noisy", "noisy", tools=1)])  # also answers "pegboard-0"
    async with catalog.running(prewarm=False):
        for q in ("x", "y"):
            output = await catalog.call_tool("noisy", "tool_0", {"q": q})
            assert output.as_text() == f'tool_0:{{"q": "{q}"}}'
        assert catalog.status("noisy").state == "connected"


async def test_a_cancelled_call_tells_the_server_which_request_it_abandoned(
    tmp_path: Path,
) -> None:
    log = tmp_path / "ids"
    catalog = McpCatalog([scripted("s1", "hang-call", tools=1, id_log=log, call_timeout=0.5)])
    async with catalog.running(prewarm=False):
        with pytest.raises(ServerUnavailable, match=r"tool 'slow' did not answer within 0.5s"):
            await catalog.call_tool("s1", "slow", {})
        output = await catalog.call_tool("s1", "tool_0", {"q": "next"})
        assert output.as_text() == 'tool_0:{"q": "next"}'
    assert requests(log, "tools/call") == ["pegboard-1", "pegboard-2"]
    assert requests(log, "notifications/cancelled") == ["pegboard-1"]


async def test_the_call_timeout_also_ends_a_request_the_server_stopped_reading() -> None:
    catalog = McpCatalog([scripted("s1", "deaf-call", tools=1, call_timeout=0.5)])
    async with catalog.running(prewarm=False):
        with pytest.raises(ServerUnavailable, match=r"tool 'slow' did not answer within 0.5s"):
            await catalog.call_tool("s1", "slow", {})
        # 1 MiB into a pipe nobody reads: the write itself waits, and the deadline ends it.
        # (The courtesy cancel then waits out its own bound, 5 s, on the full pipe.)
        with anyio.fail_after(20):
            started = anyio.current_time()
            with pytest.raises(ServerUnavailable, match=r"tool 'tool_0' did not answer within"):
                await catalog.call_tool("s1", "tool_0", {"q": "x" * (1 << 20)})
        assert anyio.current_time() - started < 10


async def test_a_large_answer_under_the_cap_arrives_whole() -> None:
    catalog = McpCatalog([scripted("s1", "large-result", tools=1)])
    async with catalog.running(prewarm=False):
        output = await catalog.call_tool("s1", "tool_0", {})
    assert output.as_text() == "z" * (2 << 20)


async def test_a_call_that_cannot_be_written_as_json_goes_through_the_sdk(tmp_path: Path) -> None:
    log = tmp_path / "ids"
    catalog = McpCatalog([scripted("s1", tools=1, id_log=log)])
    async with catalog.running(prewarm=False):
        output = await catalog.call_tool("s1", "tool_0", {"q": float("nan")})
    assert output.as_text() == 'tool_0:{"q": null}'  # the SDK's serializer: NaN as null
    (sent,) = requests(log, "tools/call")
    assert isinstance(sent, int)


@pytest.mark.parametrize(
    ("result", "plain"),
    [
        (b'{"content":[{"type":"text","text":"ok"}]}', True),
        (b'{"content":[{"type":"text","text":"\\ud800"}]}', False),  # pydantic refuses it
        (b'{"content":[],"structuredContent":{"a":' + b"[" * 130 + b"]" * 130 + b"}}", False),
        (b'{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}', False),
    ],
)
async def test_only_a_plain_answer_skips_the_sdks_parser(result: bytes, plain: bool) -> None:
    import mcp_types

    from pegboard.mcp.direct import DirectRequests

    sent: list[bytes] = []

    async def send(line: bytes) -> None:
        sent.append(line)

    direct = DirectRequests(send)
    answers: list[object] = []
    async with anyio.create_task_group() as tg:

        async def call() -> None:
            answers.append(await direct.request("tools/call", {"name": "t", "arguments": {}}))

        tg.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        request_id = json.loads(sent[0])["id"]
        line = b'{"jsonrpc":"2.0","id":"%s","result":%s}' % (request_id.encode(), result)
        assert direct.take(line)

    if plain:
        assert answers == [json.loads(result)]
    else:  # the SDK's message: a response, or the error standing in for an unreadable one
        assert isinstance(answers[0], mcp_types.JSONRPCResponse | mcp_types.JSONRPCError)

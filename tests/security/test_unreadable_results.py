"""Attack: a server answers a call with a result the JSON parser refuses (nested 250 levels
deep, or cut short), hoping the caller waits out the whole call timeout and is told the server
did not answer.

Held: the answer's id is read off its top level and the call fails at once, saying what was
wrong; a line that answers no request is still ignored.
"""

from __future__ import annotations

import time

import pytest

from pegboard.errors import PegboardError
from pegboard.mcp import McpCatalog
from pegboard.mcp.framing import unreadable_answer
from tests.mcp.conftest import scripted

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("deep-result", "nested too deeply (the JSON parser stops at 200 levels)"),
        ("broken-result", "not valid JSON"),
    ],
)
async def test_an_unreadable_answer_fails_the_call_at_once_saying_why(mode: str, why: str) -> None:
    config = scripted("s", mode).model_copy(update={"call_timeout": 30.0})
    catalog = McpCatalog([config])
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("s")
        started = time.monotonic()
        try:
            output = await catalog.call_tool("s", "tool_0", {"q": "x"})
            text = output.as_text()
        except PegboardError as exc:
            text = str(exc)
        elapsed = time.monotonic() - started
        after = await catalog.refresh_tools("s")  # the connection is still usable

    assert f"the server's answer could not be read: {why}" in text
    assert elapsed < 10.0  # far below the 30 s call timeout
    assert [t.name for t in after] == ["tool_0", "tool_1", "tool_2"]


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc": "2.0", "id": 3, "method": "x", "params": ' + b"[" * 300 + b"]" * 300 + b"}",
        b'{"jsonrpc": "2.0", "method": "n", "params": {"a": ' + b"[" * 300 + b"]" * 300 + b"}}",
        b'{"jsonrpc": "2.0", "id": true, "result": ' + b"[" * 300 + b"]" * 300 + b"}",
        b'{"jsonrpc": "2.0", "x": {"id": 4, "result": 1}, "y": ' + b"[" * 300 + b"]" * 300 + b"}",
        b"not json at all",
    ],
)
def test_a_bad_line_that_answers_no_request_is_not_turned_into_an_answer(line: bytes) -> None:
    assert unreadable_answer(line, ValueError("Invalid JSON: recursion limit exceeded")) is None


def test_the_id_of_a_deep_answer_is_read_off_its_top_level_string_ids_too() -> None:
    line = (
        b'{"result": {"a": ' + b"[" * 300 + b"]" * 300 + b'}, "id": "req-\\"7", "jsonrpc": "2.0"}'
    )
    answer = unreadable_answer(line, ValueError("Invalid JSON: recursion limit exceeded"))

    assert answer is not None
    assert answer.message.model_dump(exclude_none=True) == {  # data marks it as ours
        "jsonrpc": "2.0",
        "id": 'req-"7',
        "error": {
            "code": -32603,
            "message": "the server's answer could not be read: nested too deeply (the JSON "
            "parser stops at 200 levels)",
            "data": "pegboard: unreadable answer",
        },
    }

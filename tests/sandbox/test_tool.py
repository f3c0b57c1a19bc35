"""tool_exec over real entries and the one call path (execute_entry): routing, approval, audit,
validation, parallel calls, images."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from pegboard.calls import (
    ApprovalRequest,
    Call,
    CallbackApprovalHandler,
    CallRecord,
    CallSession,
    Decision,
    execute_entry,
)
from pegboard.core.entry import ToolEntry
from pegboard.core.output import ImagePart, TextPart, ToolOutput
from pegboard.core.tool import Tool, ToolContext
from pegboard.sandbox import ExecLimits
from pegboard.sandbox.tool import EXEC_DESCRIPTION, EXEC_SCHEMA, make_tool_exec, python_signature

pytestmark = pytest.mark.anyio

CTX = ToolContext(call_id="outer-7")


def entry(name: str, fn: Any, *, needs_approval: bool | None = None) -> ToolEntry:
    tool = Tool.from_function(fn, needs_approval=needs_approval)
    return ToolEntry(name=name, namespace="mcp:notes", tool=tool)


class Harness:
    """Entries, the shared call path with an audit log, and the tool_exec over them."""

    def __init__(self, *entries: ToolEntry, asked: list[ApprovalRequest] | None = None) -> None:
        self.entries = {e.name: e for e in entries}
        self.audit: list[CallRecord] = []
        self.asked = asked if asked is not None else []

        def approve(request: ApprovalRequest) -> Decision:
            self.asked.append(request)
            return "allow_once"

        self.session = CallSession(
            approval_handler=CallbackApprovalHandler(approve), audit=self.audit.append
        )
        self.seen_ids: list[str] = []

    async def call_tool(self, name: str, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        self.seen_ids.append(ctx.call_id)
        call = Call(name, args, ctx, via="tool_exec", session=self.session, interactive=False)
        return await execute_entry(self.entries[name], call)

    async def run(self, code: str, limits: ExecLimits | None = None) -> ToolOutput:
        tool = make_tool_exec(self.call_tool, lambda: self.entries.values(), limits)
        return await tool.run({"code": code}, CTX)


async def test_a_gated_tool_called_from_code_raises_permission_error_and_never_runs() -> None:
    ran: list[str] = []

    def delete_note(note_id: str) -> str:
        """Delete a note."""
        ran.append(note_id)
        return "deleted"

    h = Harness(entry("mcp__notes__delete", delete_note, needs_approval=True))
    code = (
        "try:\n"
        "    await mcp__notes__delete(note_id='n1')\n"
        "except PermissionError as e:\n"
        "    r = 'refused: ' + str(e)\n"
        "r"
    )
    out = await h.run(code)
    assert ran == []
    assert h.asked == []  # never prompts from inside code, even with a handler configured
    assert out.is_error is False
    assert out.as_text() == (
        '"refused: Tool mcp__notes__delete requires user approval; call it directly instead '
        'of via tool_exec, so the user can approve it."\ntool calls: 1 (1 failed)'
    )
    assert [(r.tool, r.via, r.outcome, r.call_id) for r in h.audit] == [
        ("mcp__notes__delete", "tool_exec", "ApprovalRequired", "outer-7::mcp__notes__delete#1")
    ]


async def test_every_call_from_code_leaves_one_audit_record_with_a_nested_id() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    h = Harness(entry("mcp__notes__add", add))
    out = await h.run("s = 0\nfor i in range(3):\n    s = await mcp__notes__add(a=s, b=i)\ns")
    assert out.as_text() == "3\ntool calls: 3"
    assert [(r.call_id, r.outcome) for r in h.audit] == [
        (f"outer-7::mcp__notes__add#{n}", "ok") for n in (1, 2, 3)
    ]


async def test_keyword_arguments_are_validated_against_the_schema() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    h = Harness(entry("mcp__notes__add", add))
    code = (
        "errors = []\n"
        "for call in (lambda: mcp__notes__add(a='x', b=2), lambda: mcp__notes__add(a=1),\n"
        "             lambda: mcp__notes__add(1, 2)):\n"
        "    try:\n"
        "        await call()\n"
        "    except TypeError as e:\n"
        "        errors.append(str(e))\n"
        "errors"
    )
    out = await h.run(code)
    errors = out.structured["result"]
    assert len(errors) == 3
    assert errors[0] == 'Invalid params for "mcp__notes__add": a: expected integer, got string "x"'
    assert errors[1].startswith('Invalid params for "mcp__notes__add": ')
    assert errors[2] == (
        "mcp__notes__add() takes keyword arguments only: mcp__notes__add(name=value, ...); "
        "got 2 positional arguments"
    )
    assert [r.outcome for r in h.audit] == ["InvalidToolArguments", "InvalidToolArguments"]


async def test_gather_runs_three_tools_in_parallel_and_the_code_joins_their_results() -> None:
    started = 0
    all_started = anyio.Event()

    async def wait_for_all(tag: str) -> str:
        nonlocal started
        started += 1
        if started == 3:
            all_started.set()
        await all_started.wait()  # a sequential gather would never get past the first call
        return tag.upper()

    async def weather(city: str) -> str:
        """Weather of a city."""
        return await wait_for_all(f"sun in {city}")

    async def news(topic: str) -> str:
        """News on a topic."""
        return await wait_for_all(f"news on {topic}")

    async def stock(symbol: str) -> str:
        """Price of a stock."""
        return await wait_for_all(f"{symbol} up")

    h = Harness(
        entry("mcp__w__weather", weather),
        entry("mcp__n__news", news),
        entry("mcp__s__stock", stock),
    )
    code = (
        "w, n, s = await gather(mcp__w__weather(city='Oslo'), mcp__n__news(topic='ai'),\n"
        "                       mcp__s__stock(symbol='ACME'))\n"
        "' | '.join([w, n, s])"
    )
    out = await h.run(code, ExecLimits(wall_seconds=20))
    assert out.as_text() == '"SUN IN OSLO | NEWS ON AI | ACME UP"\ntool calls: 3'


async def test_loops_and_filtering_over_structured_results() -> None:
    def list_notes(folder: str) -> list[dict[str, Any]]:
        """List notes of a folder."""
        return [{"id": i, "title": f"{folder} note {i}", "done": i % 2 == 0} for i in range(6)]

    h = Harness(entry("mcp__notes__list", list_notes))
    code = (
        "todo = []\n"
        "for folder in ['work', 'home']:\n"
        "    notes = await mcp__notes__list(folder=folder)\n"
        "    todo += [n['title'] for n in notes if not n['done']]\n"
        "print(len(todo), 'open')\n"
        "todo"
    )
    out = await h.run(code)
    assert out.structured["result"] == [
        "work note 1",
        "work note 3",
        "work note 5",
        "home note 1",
        "home note 3",
        "home note 5",
    ]
    assert out.structured["printed"] == "6 open\n"
    assert out.as_text().endswith("printed:\n6 open\ntool calls: 2")


async def test_images_in_tool_results_are_lifted_out_as_image_parts() -> None:
    def snapshot() -> ToolOutput:
        """Take a screenshot."""
        return ToolOutput(parts=(TextPart("screen"), ImagePart("aGVsbG8=", "image/png")))

    h = Harness(entry("mcp__ui__snap", snapshot))
    out = await h.run("r = await mcp__ui__snap()\nr")
    assert out.parts == (
        TextPart('"screen\\n[image 1: image/png]"\ntool calls: 1'),
        ImagePart("aGVsbG8=", "image/png"),
    )


async def test_meta_tools_are_not_callable_from_code() -> None:
    h = Harness(entry("tool_invoke", lambda name: name))
    out = await h.run("await tool_invoke(name='x')")
    assert out.is_error
    assert out.as_text() == "tool_exec failed: line 1: NameError: name 'tool_invoke' is not defined"


async def test_a_tool_with_a_non_identifier_name_is_called_by_its_alias() -> None:
    def get_env(key: str) -> str:
        """Read a fake setting."""
        return f"value of {key}"

    e = entry("get-env", get_env)
    signature = python_signature(e)
    assert signature == (
        'async def get_env_e42fa272(*, key: str) -> str:\n    """Read a fake setting."""'
    )
    out = await Harness(e).run("await get_env_e42fa272(key='HOME')")
    assert out.as_text() == '"value of HOME"\ntool calls: 1'


def test_the_tool_exec_definition_is_constant() -> None:
    tool = make_tool_exec(Harness().call_tool, [])
    assert tool.description == EXEC_DESCRIPTION
    assert tool.input_schema == EXEC_SCHEMA
    assert "await gather(" in EXEC_DESCRIPTION


def test_exec_aliases_cover_the_exposed_tools_and_match_the_signatures() -> None:
    from pegboard.sandbox.tool import exec_aliases

    def noop() -> None:
        """Do nothing."""

    names = ["get-env", "mcp__a__b", "tool_search", "tool_invoke", "tool_inspect", "tool_exec"]
    entries = [entry(name, noop) for name in names]
    aliases = exec_aliases(entries)
    # Of the meta-tools only tool_search (read-only discovery) is callable from code.
    assert aliases == {
        "get-env": "get_env_e42fa272",
        "mcp__a__b": "mcp__a__b",
        "tool_search": "tool_search",
    }
    assert python_signature(entries[0], aliases["get-env"]) == (
        'async def get_env_e42fa272() -> Any:\n    """Do nothing."""'
    )


async def test_a_tool_without_an_executor_raises_in_the_code_and_is_audited() -> None:
    h = Harness(ToolEntry(name="mcp__notes__ghost", namespace="mcp:notes", tool=Tool("Nothing.")))
    code = (
        "try:\n"
        "    await mcp__notes__ghost()\n"
        "except Exception as e:\n"
        "    r = type(e).__name__ + ': ' + str(e)\n"
        "r"
    )
    out = await h.run(code)
    assert out.is_error is False
    assert out.as_text() == (
        '"RuntimeError: Tool mcp__notes__ghost has no execute handler; it cannot be called."'
        "\ntool calls: 1 (1 failed)"
    )
    assert [(r.tool, r.outcome) for r in h.audit] == [("mcp__notes__ghost", "ToolExecutionError")]


async def test_cancelling_a_run_from_outside_stops_it_and_the_tool_call_inside_it() -> None:
    started, stopped = anyio.Event(), anyio.Event()

    async def wait_forever() -> str:
        """Wait until cancelled."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        return "unreachable"

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    h = Harness(entry("mcp__notes__wait", wait_forever), entry("mcp__notes__add", add))
    results: list[ToolOutput] = []

    async def run() -> None:
        results.append(await h.run("await gather(mcp__notes__wait())"))

    with anyio.fail_after(10):  # far below the run's own 30 s wall limit
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await started.wait()
            group.cancel_scope.cancel()
        await stopped.wait()
    assert results == []  # cancelled: no result was produced
    assert [r.tool for r in h.audit] == ["mcp__notes__wait"]
    # The sandbox is usable at once by the next run.
    with anyio.fail_after(10):
        out = await h.run("await mcp__notes__add(a=1, b=2)")
    assert out.as_text() == "3\ntool calls: 1"

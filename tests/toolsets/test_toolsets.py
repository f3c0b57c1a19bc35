"""The toolset protocol and its wrappers, composed as every route composes them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from pegboard import (
    AssistantSettings,
    CallRecord,
    CallSession,
    InvalidToolArguments,
    Tool,
    ToolApplyScope,
    ToolContext,
    ToolEntry,
    ToolNotAllowed,
    ToolNotFound,
    ToolOutput,
    ToolRegistry,
)
from pegboard.calls import Call
from pegboard.toolsets import (
    DeferralSettings,
    RegistryToolset,
    ToolList,
    WrapperToolset,
    call_or_error,
    compose,
)
from tests.deferral.factories import heavy

pytestmark = pytest.mark.anyio


def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()


def registry() -> ToolRegistry:
    tool = Tool.from_function(shout)
    return ToolRegistry([ToolEntry("shout", "user", tool), ToolEntry("whisper", "user", tool)])


def call(name: str, session: CallSession, **args: str) -> Call:
    return Call(name, args, ToolContext(call_id="c1"), "direct", session)


def test_the_profiles_disabled_tools_are_left_out_of_the_listing_for_any_tool() -> None:
    scope = ToolApplyScope(assistant=AssistantSettings(disabled_tools=frozenset({"whisper"})))

    tools = RegistryToolset(registry()).list_tools(scope)

    assert tools.names == ["shout"]
    with pytest.raises(ToolNotAllowed):
        tools.resolve("whisper")
    with pytest.raises(ToolNotFound, match=r"^Tool not found: shot\. Did you mean: shout\?$"):
        tools.resolve("shot")


async def test_audit_is_outermost_so_an_unknown_name_still_leaves_one_record() -> None:
    records: list[CallRecord] = []
    session = CallSession(audit=records.append)
    toolset = compose(RegistryToolset(registry()))
    tools = toolset.list_tools(ToolApplyScope())

    ok = await call_or_error(toolset, tools, call("shout", session, text="hi"))
    unknown = await call_or_error(toolset, tools, call("shot", session, text="hi"))

    assert (ok.as_text(), unknown.as_text()) == ("HI", "Tool not found: shot. Did you mean: shout?")
    assert [(r.tool, r.outcome) for r in records] == [("shout", "ok"), ("shot", "ToolNotFound")]


async def test_a_deferred_tool_stays_callable_by_its_wire_name() -> None:
    big = ToolRegistry([heavy(f"mcp__s1__t{i}") for i in range(5)])
    toolset = compose(RegistryToolset(big), DeferralSettings(big, context_window=4000))

    tools = toolset.list_tools(ToolApplyScope())

    assert tools.names == ["tool_search", "tool_inspect", "tool_invoke"]
    assert [e.name for e in tools.hidden][:2] == ["mcp__s1__t0", "mcp__s1__t1"]
    assert tools.resolve("mcp__s1__t0").name == "mcp__s1__t0"
    assert tools.auto_deferred is True


@dataclass(frozen=True)
class Uppercased(WrapperToolset):
    """A wrapper of a few lines: what a new concern (a prefix, a filter, a cache) looks like."""

    async def call_tool(self, call: Call, tools: ToolList) -> ToolOutput:
        output = await self.inner.call_tool(call, tools)
        return ToolOutput.text(f"[{output.as_text()}]")


async def test_a_new_wrapper_composes_with_the_rest() -> None:
    toolset = compose(Uppercased(RegistryToolset(registry())))
    tools = toolset.list_tools(ToolApplyScope())

    out = await toolset.call_tool(call("shout", CallSession(), text="hi"), tools)

    assert out.as_text() == "[HI]"


async def test_arguments_are_checked_once_and_a_run_alone_still_checks_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The approval step checks a call's arguments against its tool's schema; running that
    tool with those very arguments does not check them again. A run the approval step did
    not check (the source toolset alone; arguments swapped after the check) checks them."""
    import pegboard.calls.execute as execute

    checks: list[object] = []
    validate = execute.validate_arguments

    def counted(*args: object, **kwargs: object) -> None:
        checks.append(args[1])
        validate(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(execute, "validate_arguments", counted)
    session = CallSession()
    toolset = compose(RegistryToolset(registry()))
    tools = toolset.list_tools(ToolApplyScope())
    output = await call_or_error(toolset, tools, call("shout", session, text="hi"))
    assert output.as_text() == "HI"
    assert len(checks) == 1

    async def echo(args: dict[str, object], ctx: ToolContext) -> object:
        return args.get("text")  # no checks of its own: only the schema refuses

    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    raw = Tool("Echo.", input_schema=schema, execute=echo)
    alone = RegistryToolset(ToolRegistry([ToolEntry("shout", "user", raw)]))
    listed = alone.list_tools(ToolApplyScope())
    with pytest.raises(InvalidToolArguments):
        await alone.call_tool(call("shout", session, txt="hi"), listed)

    swapped = call("shout", session, text="hi")
    swapped.checked = (listed.resolve("shout"), swapped.arguments)
    swapped.arguments = {"txt": "hi"}
    with pytest.raises(InvalidToolArguments):
        await alone.call_tool(swapped, listed)


def test_a_calls_session_shares_every_field_of_its_session_but_the_calls_own() -> None:
    # A distinct object per field: a field for_call forgot would come back as its default.
    original = CallSession(**{f.name: object() for f in dataclasses.fields(CallSession)})
    own = {
        "approval_handler": object(),
        "session_id": "s-call",
        "client": "client-call",
        "principal": object(),
        "grant_ttl": 5.0,
        "access": object(),
    }
    derived = original.for_call(**own)  # type: ignore[arg-type]

    for f in dataclasses.fields(CallSession):
        expected = own[f.name] if f.name in own else getattr(original, f.name)
        assert getattr(derived, f.name) is expected, f.name

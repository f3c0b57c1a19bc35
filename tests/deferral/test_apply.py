import pytest

from pegboard.core.registry import ToolRegistry
from pegboard.core.tool import Tool, ToolContext
from pegboard.deferral import apply_defer_exposition, invoke_tool, search_pool
from pegboard.errors import InvalidToolArguments, ToolNotAllowed, ToolNotFound
from tests.deferral.factories import Calls, entry, heavy, recorder, tools_of

META = {"tool_search", "tool_inspect", "tool_invoke"}


def test_nothing_deferred_returns_the_same_object_and_no_meta_tools() -> None:
    small = entry("web_search")
    registry = ToolRegistry([small])
    tools = tools_of(small)
    result = apply_defer_exposition(tools, registry, 32_000)
    assert result.tools is tools
    assert result.deferred == ()
    assert result.prompt_section == ""
    assert result.pool is None


def test_an_empty_tool_set_passes_through() -> None:
    tools: dict[str, Tool] = {}
    result = apply_defer_exposition(tools, ToolRegistry(), None)
    assert result.tools is tools
    assert result.decision is None


def test_an_always_entry_is_stripped_and_the_three_meta_tools_added() -> None:
    registry = ToolRegistry(
        [entry("web_search", defer="never"), entry("browser_open", defer="always")]
    )
    result = apply_defer_exposition(tools_of(*registry.get_all()), registry, 32_000)
    assert set(result.tools) == {"tool_inspect", "tool_invoke", "tool_search", "web_search"}
    assert [e.name for e in result.deferred] == ["browser_open"]
    assert "<deferred-tools>" in result.prompt_section


def test_five_heavy_auto_entries_are_stripped_and_never_entries_kept() -> None:
    entries = [heavy(f"mcp__s1__t{i}") for i in range(5)] + [entry("web_search", defer="never")]
    registry = ToolRegistry(entries)
    result = apply_defer_exposition(tools_of(*entries), registry, 32_000)
    assert set(result.tools) == META | {"web_search"}
    assert [e.name for e in result.deferred] == [f"mcp__s1__t{i}" for i in range(5)]
    assert list(result.tools)[-3:] == ["tool_search", "tool_inspect", "tool_invoke"]


def test_one_fat_auto_entry_returns_the_same_object() -> None:
    fat = heavy("fat", fields=400)
    tools = tools_of(fat)
    result = apply_defer_exposition(tools, ToolRegistry([fat]), 32_000)
    assert result.tools is tools
    assert not META & set(result.tools)


def test_a_tool_without_a_registry_entry_is_left_alone() -> None:
    deferred = [heavy(f"t{i}") for i in range(5)]
    registry = ToolRegistry(deferred)
    adhoc = Tool(description="Not registered anywhere.")
    result = apply_defer_exposition({**tools_of(*deferred), "adhoc": adhoc}, registry, 32_000)
    assert result.tools["adhoc"] is adhoc
    assert "adhoc" in result.allowed
    assert [e.name for e in result.deferred] == [f"t{i}" for i in range(5)]


def test_a_request_that_already_has_tool_search_is_left_unchanged() -> None:
    hidden = entry("browser_open", defer="always")
    registry = ToolRegistry([hidden])
    tools = {**tools_of(hidden), "tool_search": Tool(description="the caller's own")}
    assert apply_defer_exposition(tools, registry, None).tools is tools


@pytest.mark.anyio
async def test_the_allowed_set_and_snapshot_are_fixed_when_exposition_is_applied() -> None:
    calls: Calls = []
    opener = entry("browser_open", defer="always", execute=recorder(calls))
    closer = entry("browser_close", defer="always", execute=recorder(calls))
    registry = ToolRegistry([opener, closer])
    result = apply_defer_exposition(tools_of(opener), registry, None)
    assert result.pool is not None
    assert result.allowed == {"browser_open"}
    registry.register(entry("browser_back", defer="always", execute=recorder(calls)))
    ctx = ToolContext(call_id="c")
    with pytest.raises(ToolNotAllowed, match="Tool not available in this request: browser_close"):
        await invoke_tool(result.pool, "browser_close", {"query": "x"}, ctx)
    with pytest.raises(ToolNotFound, match="Tool not found: browser_back"):
        await invoke_tool(result.pool, "browser_back", {"query": "x"}, ctx)
    assert calls == []


@pytest.mark.anyio
async def test_deferred_browser_tools_can_be_searched_inspected_and_invoked() -> None:
    calls: Calls = []
    url_schema = {
        "type": "object",
        "properties": {"url": {"type": "string", "description": "Page to open"}},
        "required": ["url"],
    }
    browser = [
        entry(
            "browser_open",
            namespace="browser",
            defer="always",
            description="Open a web page in the browser.",
            schema=url_schema,
            execute=recorder(calls, "opened"),
        ),
        entry("browser_click", namespace="browser", defer="always", description="Click."),
    ]
    registry = ToolRegistry(browser)
    result = apply_defer_exposition(tools_of(*browser), registry, None)
    pool = result.pool
    assert pool is not None
    found = search_pool(pool, ["open a page"], namespace="browser").as_text()
    assert found.splitlines()[:2] == [
        "[browser]",
        "- browser_open: Open a web page in the browser.",
    ]
    inspect = await result.tools["tool_inspect"].run({"name": "browser_open"}, ToolContext())
    assert "@param {string} params.url - Page to open (required)" in inspect.as_text()
    invoke = result.tools["tool_invoke"]
    out = await invoke.run(
        {"name": "browser_open", "params": {"url": "https://example.org"}},
        ToolContext(call_id="browser-1"),
    )
    assert out.as_text() == "opened"
    assert calls == [("browser-1::browser_open", {"url": "https://example.org"}, "browser_open")]


@pytest.mark.anyio
async def test_the_injected_invoke_runs_an_uninspected_valid_call() -> None:
    calls: Calls = []
    opener = entry("browser_open", defer="always", execute=recorder(calls, "opened"))
    registry = ToolRegistry([opener, entry("browser_close", defer="always")])
    result = apply_defer_exposition(tools_of(*registry.get_all()), registry, None)
    assert result.pool is not None
    ctx = ToolContext(call_id="outer")
    out = await result.tools["tool_invoke"].run(
        {"name": "browser_open", "params": {"query": "a"}}, ctx
    )
    assert out.as_text() == "opened"
    bad = {"name": "browser_open", "params": {"query": 1}}
    with pytest.raises(InvalidToolArguments) as caught:
        await result.tools["tool_invoke"].run(bad, ctx)
    assert (
        str(caught.value)
        == 'Invalid params for "browser_open": query: expected string, got integer 1'
    )
    await result.tools["tool_inspect"].run({"name": "browser_open"}, ctx)
    assert calls == [("outer::browser_open", {"query": "a", "limit": 10}, "browser_open")]

"""The gateway's tool surface and MCP server, in process (no subprocess, no transport)."""

from __future__ import annotations

import json

import anyio
import mcp_types
import pytest
from mcp import Client

from pegboard import Tool, ToolApplyScope, ToolEntry, ToolRegistry
from pegboard.calls.approval import ApprovalRequest, CallbackApprovalHandler, Decision
from pegboard.core.status import NamespaceStatus
from pegboard.errors import ApprovalRequired
from pegboard.gateway.server import Gateway
from pegboard.toolsets.exposure import RegistrySurface

TOPICS = [
    "weather in a city",
    "send an email",
    "book a meeting",
    "convert currency",
    "resize a photo",
]


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _bulk(registry: ToolRegistry, count: int = 12) -> None:
    for i in range(count):
        text = f"Tool {i}: {TOPICS[i % len(TOPICS)]}, with a long explanation of every option. " * 6
        registry.register(ToolEntry(f"bulk_{i}", "bulk", Tool.from_function(add, description=text)))


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(ToolEntry("add", "math", Tool.from_function(add)))
    gated = Tool.from_function(add, description="Add, after asking.", needs_approval=True)
    registry.register(ToolEntry("guarded_add", "math", gated))
    return registry


def _surface(registry: ToolRegistry, **kwargs: object) -> RegistrySurface:
    return RegistrySurface(registry, ToolApplyScope, **kwargs)  # type: ignore[arg-type]


def test_a_small_pool_is_listed_inline_without_instructions() -> None:
    surface = _surface(_registry())

    assert [t.name for t in surface.list_tools()] == ["add", "guarded_add"]
    assert surface.instructions() is None


def test_a_large_pool_is_deferred_behind_the_meta_tools_but_gated_tools_stay_inline() -> None:
    registry = _registry()
    _bulk(registry)

    surface = _surface(registry, context_window=4000)

    assert [t.name for t in surface.list_tools()] == [
        "guarded_add",
        "tool_inspect",
        "tool_invoke",
        "tool_search",
    ]
    assert (surface.instructions() or "").startswith("<deferred-tools>")


def test_no_defer_lists_everything() -> None:
    registry = _registry()
    _bulk(registry)

    surface = _surface(registry, context_window=4000, defer=False)

    assert len(surface.list_tools()) == 14


def test_listeners_hear_only_real_changes() -> None:
    registry = _registry()
    surface = _surface(registry)
    heard: list[int] = []
    surface.subscribe(lambda: heard.append(1))

    assert surface.refresh() is False
    registry.register(ToolEntry("add", "math", Tool.from_function(add)))
    assert surface.refresh() is False
    registry.deregister("add")
    assert surface.refresh() is True
    assert heard == [1]


def test_a_first_listing_hashes_no_definition() -> None:
    # A read command (`tools list`) lists once: what a change is judged by waits for a second
    # listing, so no definition is serialised and hashed for nothing.
    registry = _registry()
    _bulk(registry)
    surface = _surface(registry, defer=False)

    assert len(surface.tools.shown) == 14
    assert not [e.name for e in surface.tools.shown if "hash" in e.definition.__dict__]
    assert surface.refresh() is False  # the first listing's signature, made now, is the same


def test_the_mcp_json_follows_each_listing() -> None:
    registry = _registry()
    surface = _surface(registry, defer=False)

    first = surface.list_tools_json()
    assert [t["name"] for t in first] == ["add", "guarded_add"]
    assert surface.list_tools_json() is first  # made once per listing
    registry.register(ToolEntry("plus", "math", Tool.from_function(add)))
    assert surface.refresh() is True
    assert [t["name"] for t in surface.list_tools_json()] == ["add", "guarded_add", "plus"]


@pytest.mark.anyio
async def test_calls_run_through_the_shared_execution_path() -> None:
    surface = _surface(_registry())

    ok = await surface.call_tool("add", {"a": 1, "b": 2}, call_id="c1", approval=None)
    bad = await surface.call_tool("add", {"a": "x", "b": 2}, call_id="c2", approval=None)
    unknown = await surface.call_tool("ad", {}, call_id="c3", approval=None)

    assert (ok.as_text(), ok.is_error) == ("3", False)
    assert bad.is_error is True
    assert bad.as_text().startswith('Invalid params for "add"')
    assert unknown.as_text() == "Tool not found: ad. Did you mean: add?"


@pytest.mark.anyio
async def test_a_gated_direct_call_without_a_handler_raises_for_the_transport_to_explain() -> None:
    surface = _surface(_registry())

    with pytest.raises(ApprovalRequired):
        await surface.call_tool("guarded_add", {"a": 1, "b": 2}, call_id="c", approval=None)


@pytest.mark.anyio
async def test_a_gated_call_with_invalid_arguments_is_refused_before_anyone_is_asked() -> None:
    surface = _surface(_registry())
    asked: list[dict[str, object]] = []

    def answer(request: ApprovalRequest) -> Decision:
        asked.append(dict(request.arguments))
        return "allow_once"

    handler = CallbackApprovalHandler(answer)
    bad = await surface.call_tool("guarded_add", {"a": "x", "b": 2}, call_id="c1", approval=handler)
    good = await surface.call_tool("guarded_add", {"a": 1, "b": 2}, call_id="c2", approval=handler)

    assert bad.is_error is True
    assert bad.as_text().startswith('Invalid params for "guarded_add"')
    assert good.as_text() == "3"
    assert asked == [{"a": 1, "b": 2}]  # the human saw only the call that ran


@pytest.mark.anyio
async def test_the_gateway_notifies_connected_clients_when_the_exposed_list_changes() -> None:
    registry = _registry()
    surface = _surface(registry)
    gateway = Gateway(surface)
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            changed.set()

    with anyio.fail_after(10):
        async with (
            anyio.create_task_group() as tg,
            Client(gateway.server, mode="legacy", message_handler=on_message) as client,
        ):
            tg.start_soon(gateway.announce_changes)
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.list_changed is True
            await client.list_tools()
            registry.register(ToolEntry("mul", "math", Tool.from_function(add)))
            surface.refresh()
            await changed.wait()
            names = [t.name for t in (await client.list_tools()).tools]
            tg.cancel_scope.cancel()

    assert names == ["add", "guarded_add", "mul"]


def test_with_nothing_deferred_the_instructions_name_failing_servers_only() -> None:
    statuses = {
        "mcp:gh": NamespaceStatus(label="mcp:GitHub", state="failed", detail="exit code 1"),
        "mcp:ok": NamespaceStatus(label="mcp:ok", state="connected"),
    }

    surface = _surface(_registry(), statuses=lambda: statuses)

    assert surface.instructions() == (
        "<mcp-servers>\n"
        "These MCP servers are configured but failing; their tools are unavailable:\n"
        "- mcp:GitHub: failed (exit code 1)\n"
        "</mcp-servers>"
    )


def test_the_deferred_section_shows_the_servers_state_at_the_time_it_is_asked() -> None:
    registry = _registry()
    _bulk(registry)
    state = {"mcp:gh": NamespaceStatus(label="mcp:GitHub", state="connected")}
    surface = _surface(registry, context_window=4000, statuses=lambda: state)
    before = surface.instructions() or ""

    state["mcp:gh"] = NamespaceStatus(label="mcp:GitHub", state="failed", detail="exit code 1")

    assert "mcp:GitHub" not in before
    assert "mcp:GitHub" in (surface.instructions() or "")


@pytest.mark.anyio
async def test_a_call_by_the_pre_hyphen_wire_name_reaches_the_renamed_tool() -> None:
    from pegboard.core.entry import ToolSource
    from pegboard.core.names import legacy_mcp_tool_name

    registry = ToolRegistry()
    source = ToolSource("my-box", "add-two")
    registry.register(
        ToolEntry("mcp__my-box__add-two", "mcp:my-box", Tool.from_function(add), source=source)
    )
    surface = _surface(registry)

    output = await surface.call_tool(
        legacy_mcp_tool_name("my-box", "add-two"), {"a": 2, "b": 3}, call_id="c", approval=None
    )

    assert (output.is_error, output.as_text()) == (False, "5")


def test_a_deferred_pool_stays_deferred_when_it_shrinks_below_the_threshold() -> None:
    registry = ToolRegistry()
    _bulk(registry, 12)  # about 1,550 tokens; 6 of them about 780
    surface = _surface(registry, context_window=12_000)  # threshold 1,200
    meta = ["tool_inspect", "tool_invoke", "tool_search"]
    assert [t.name for t in surface.list_tools()] == meta

    for i in range(6, 12):
        registry.deregister(f"bulk_{i}")
    assert surface.refresh() is False  # still deferred: the client's list does not flip

    assert [t.name for t in surface.list_tools()] == meta
    assert (surface.instructions() or "").startswith("<deferred-tools>")
    # A surface that never deferred lists the same six tools inline: only stickiness differs.
    fresh = _surface(registry, context_window=12_000)
    assert [t.name for t in fresh.list_tools()] == [f"bulk_{i}" for i in range(6)]


@pytest.mark.anyio
async def test_the_stdio_client_is_not_filtered_by_access_rules_and_tools_list_is_cached() -> None:
    from pegboard.config.model import AllowRule
    from pegboard.core.access import AccessPolicy, AccessViews
    from pegboard.core.principal import Principal

    rules = [AllowRule(subjects=["group:ops"], servers=["builtin"], tools=["add"])]
    gateway = Gateway(_surface(_registry()), access=AccessViews(AccessPolicy.from_rules(rules)))
    async with Client(gateway.server, mode="legacy") as client:  # stdio's principal
        assert [t.name for t in (await client.list_tools()).tools] == ["add", "guarded_add"]
        assert not (await client.call_tool("add", {"a": 1, "b": 2})).is_error
    ops = Principal("alice", frozenset({"ops"}))
    listed = gateway.tools_list_json("2025-06-18", ops)
    assert [t["name"] for t in json.loads(listed)["tools"]] == ["add"]
    assert gateway.tools_list_json("2025-06-18", ops) is listed  # kept until the list changes
    stranger = gateway.tools_list_json("2025-06-18", Principal("mallory"))
    assert json.loads(stranger)["tools"] == []

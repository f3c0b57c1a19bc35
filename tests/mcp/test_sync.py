"""resolve_assistant_mcp_tool_ids and sync_mcp_tools_to_registry (SPEC section 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from pegboard.core.entry import ToolEntry, ToolSource
from pegboard.core.names import is_valid_wire_name, mcp_tool_name
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import AssistantSettings, ToolApplyScope
from pegboard.core.tool import Tool, ToolContext
from pegboard.errors import ServerInactive, ServerUnavailable
from pegboard.mcp import (
    McpCatalog,
    McpServerConfig,
    MemoryCatalogStore,
    StoredServer,
    resolve_assistant_mcp_tool_ids,
    sync_mcp_tools_to_registry,
)
from tests.mcp.conftest import scripted
from tests.mcp.listen import on_status_changed


def tool(name: str, description: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "description": description or f"{name} does things",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }


def seeded(servers: dict[str, list[dict[str, Any]] | None], **config: Any) -> McpCatalog:
    """A catalog whose cache already holds these lists (None: never warmed)."""
    store = MemoryCatalogStore()
    configs = []
    for server_id, tools in servers.items():
        options = config.get(server_id, {})
        cfg = McpServerConfig(id=server_id, command="not-started", **options)
        configs.append(cfg)
        if tools is not None:
            store.put(StoredServer(server_id, fingerprint=cfg.fingerprint, tools=tuple(tools)))
    return McpCatalog(configs, store)


def user_entry(name: str) -> ToolEntry:
    return ToolEntry(name=name, namespace="user", tool=Tool(description="mine"))


class OneBrokenRead(McpCatalog):
    """A catalog whose cache read of one server raises (a corrupt record, say)."""

    def read_tools(self, server_id: str) -> Any:
        if server_id == "broken":
            raise RuntimeError("cache record unreadable")
        return super().read_tools(server_id)


def test_one_throwing_server_does_not_stop_the_sync_of_the_others() -> None:
    store = MemoryCatalogStore()
    configs = [McpServerConfig(id=s, command="not-started") for s in ("a", "broken", "c")]
    for cfg in configs:
        store.put(StoredServer(cfg.id, fingerprint=cfg.fingerprint, tools=(tool("t"),)))
    registry = ToolRegistry()
    report = sync_mcp_tools_to_registry(registry, OneBrokenRead(configs, store))
    assert report.registered == ["mcp__a__t", "mcp__c__t"]
    assert registry.snapshot().names() == ["mcp__a__t", "mcp__c__t"]


def test_registers_every_active_servers_tools_with_identity_and_labels() -> None:
    catalog = seeded(
        {"s1": [tool("search"), tool("fetch")], "s2": [tool("send")]},
        s1={"name": "Gmail"},
    )
    registry = ToolRegistry()
    report = sync_mcp_tools_to_registry(registry, catalog)
    assert report.registered == ["mcp__s1__fetch", "mcp__s1__search", "mcp__s2__send"]
    assert (report.evicted, report.collisions) == ([], [])
    entry = registry.get_by_name("mcp__s1__search")
    assert entry is not None
    assert (entry.namespace, entry.label, entry.defer) == ("mcp:s1", "mcp:Gmail", "auto")
    assert entry.source == ToolSource("s1", "search")
    assert entry.tool.needs_approval is None
    assert entry.tool.input_schema == {"type": "object", "properties": {"q": {"type": "string"}}}
    assert registry.resolve_source("mcp__s2__send") == ToolSource("s2", "send")


def test_applies_only_when_the_exact_id_is_in_scope() -> None:
    registry = ToolRegistry()
    sync_mcp_tools_to_registry(registry, seeded({"s1": [tool("a"), tool("b")]}))
    scope = ToolApplyScope(mcp_tool_ids=frozenset({"mcp__s1__a"}))
    assert [e.name for e in registry.select_active(scope)] == ["mcp__s1__a"]


def test_an_explicit_empty_selection_activates_no_mcp_tool() -> None:
    registry = ToolRegistry([user_entry("mine")])
    sync_mcp_tools_to_registry(registry, seeded({"s1": [tool("a")]}))
    scope = ToolApplyScope(mcp_tool_ids=frozenset())
    assert [e.name for e in registry.select_active(scope)] == ["mine"]


@pytest.mark.parametrize(
    ("settings", "active"),
    [
        pytest.param(AssistantSettings(), ["mcp__s1__a", "mcp__s1__b", "mcp__s2__c"], id="auto"),
        pytest.param(
            AssistantSettings(disabled_tools=frozenset({"s1/b", "mcp__s2__c"})),
            ["mcp__s1__a"],
            id="auto minus disabled tools",
        ),
        pytest.param(
            AssistantSettings(mcp_mode="manual", mcp_server_ids=("s2",)),
            ["mcp__s2__c"],
            id="manual",
        ),
        pytest.param(AssistantSettings(mcp_mode="manual"), [], id="manual, nothing linked"),
        pytest.param(AssistantSettings(mcp_mode="disabled"), [], id="disabled"),
    ],
)
def test_an_omitted_selection_lets_the_assistants_mcp_mode_decide(
    settings: AssistantSettings, active: list[str]
) -> None:
    registry = ToolRegistry([user_entry("mine")])
    catalog = seeded({"s1": [tool("a"), tool("b")], "s2": [tool("c")]})
    sync_mcp_tools_to_registry(registry, catalog)
    scope = ToolApplyScope(assistant=settings)
    assert scope.mcp_tool_ids is None
    assert [e.name for e in registry.select_active(scope)] == [*active, "mine"]


def test_force_prompt_tool_is_never_deferred_and_needs_approval() -> None:
    catalog = seeded(
        {"s1": [tool("send"), tool("read"), tool("wipe")]},
        s1={"force_prompt_tools": ["send"]},
    )
    registry = ToolRegistry()
    assistant = AssistantSettings(force_prompt_tools=frozenset({"s1/wipe"}))
    sync_mcp_tools_to_registry(registry, catalog, assistant=assistant)
    policies = {
        e.name: (e.defer, e.tool.needs_approval) for e in registry.get_all(namespace="mcp:s1")
    }
    assert policies == {
        "mcp__s1__read": ("auto", None),
        "mcp__s1__send": ("never", True),
        "mcp__s1__wipe": ("never", True),
    }


def annotated(name: str, **hints: bool) -> dict[str, Any]:
    return tool(name) | {"annotations": hints}


def test_destructive_tools_ask_for_approval_unless_the_profile_allows_them() -> None:
    catalog = seeded(
        {
            "s1": [
                annotated("drop_table", destructiveHint=True),
                annotated("select", readOnlyHint=True),
                annotated("odd", destructiveHint=True, readOnlyHint=True),
                annotated("insert", destructiveHint=False),
                tool("plain"),
            ]
        }
    )
    asked, allowed = ToolRegistry(), ToolRegistry()

    sync_mcp_tools_to_registry(asked, catalog, assistant=AssistantSettings())
    sync_mcp_tools_to_registry(
        allowed, catalog, assistant=AssistantSettings(destructive_tools="allow")
    )

    gated = {e.name for e in asked.get_all() if e.tool.needs_approval is True}
    assert gated == {"mcp__s1__drop_table"}
    assert [e.name for e in allowed.get_all() if e.tool.needs_approval] == []


def test_resync_replaces_drifted_definitions_and_evicts_tools_gone_from_a_good_read() -> None:
    registry = ToolRegistry()
    sync_mcp_tools_to_registry(registry, seeded({"s1": [tool("a", "old"), tool("b")]}))
    report = sync_mcp_tools_to_registry(registry, seeded({"s1": [tool("a", "new")]}))
    assert report.evicted == ["mcp__s1__b"]
    assert registry.snapshot().names() == ["mcp__s1__a"]
    entry = registry.get_by_name("mcp__s1__a")
    assert entry is not None
    assert entry.description == "new"


def test_a_cold_server_read_never_evicts_its_tools() -> None:
    registry = ToolRegistry()
    sync_mcp_tools_to_registry(registry, seeded({"s1": [tool("a")]}))
    report = sync_mcp_tools_to_registry(registry, seeded({"s1": None}))
    assert report.evicted == []
    assert registry.has("mcp__s1__a")


@pytest.mark.anyio
async def test_tools_of_a_disabled_server_are_evicted_and_other_namespaces_untouched() -> None:
    catalog = seeded({"s1": [tool("a")], "s2": [tool("b")]})
    registry = ToolRegistry([user_entry("my_tool")])
    sync_mcp_tools_to_registry(registry, catalog)
    await catalog.set_enabled("s1", False)
    report = sync_mcp_tools_to_registry(registry, catalog)
    assert report.evicted == ["mcp__s1__a"]
    assert registry.snapshot().names() == ["mcp__s2__b", "my_tool"]


def test_a_wire_name_taken_by_another_tool_is_reported_and_not_registered() -> None:
    registry = ToolRegistry([user_entry("mcp__s1__search")])
    report = sync_mcp_tools_to_registry(registry, seeded({"s1": [tool("search"), tool("ok")]}))
    assert [(c.name, c.sources) for c in report.collisions] == [
        ("mcp__s1__search", (ToolSource("s1", "search"),))
    ]
    assert report.registered == ["mcp__s1__ok"]
    entry = registry.get_by_name("mcp__s1__search")
    assert entry is not None
    assert entry.namespace == "user"


def test_a_tool_listed_twice_by_one_server_is_registered_once() -> None:
    registry = ToolRegistry()
    report = sync_mcp_tools_to_registry(registry, seeded({"s1": [tool("a"), tool("a", "dup")]}))
    assert report.registered == ["mcp__s1__a"]
    assert report.collisions == []


def test_chinese_tool_and_server_names_get_distinct_valid_ids() -> None:
    catalog = seeded(
        {
            "mysql_报销": [tool("查询"), tool("更新")],
            "mysql_电梯": [tool("查询")],
        }
    )
    registry = ToolRegistry()
    report = sync_mcp_tools_to_registry(registry, catalog)
    assert len(report.registered) == 3
    assert all(is_valid_wire_name(name) for name in report.registered)
    sources = sorted(
        (s.server_id, s.tool_name) for n in report.registered if (s := registry.resolve_source(n))
    )
    assert sources == [("mysql_报销", "更新"), ("mysql_报销", "查询"), ("mysql_电梯", "查询")]


def test_a_selection_registers_only_its_ids_matched_by_catalog_id() -> None:
    catalog = seeded({"mysql_报销": [tool("查询")], "mysql_电梯": [tool("查询")]})
    wanted = mcp_tool_name("mysql_电梯", None, "查询")
    registry = ToolRegistry()
    report = sync_mcp_tools_to_registry(registry, catalog, [wanted])
    assert report.registered == [wanted]
    assert registry.snapshot().names() == [wanted]


def test_overlapping_selections_both_survive_and_stale_servers_still_go() -> None:
    catalog = seeded({"s1": [tool("a"), tool("b"), tool("c")]})
    registry = ToolRegistry()
    sync_mcp_tools_to_registry(registry, catalog, ["mcp__s1__a", "mcp__s1__b"])
    sync_mcp_tools_to_registry(registry, catalog, ["mcp__s1__b", "mcp__s1__c"])
    assert registry.snapshot().names() == ["mcp__s1__a", "mcp__s1__b", "mcp__s1__c"]
    gone = seeded({"s1": [tool("a")]})
    report = sync_mcp_tools_to_registry(registry, gone, ["mcp__s1__b"])
    assert report.evicted == ["mcp__s1__b"]
    assert registry.snapshot().names() == ["mcp__s1__a", "mcp__s1__c"]


@pytest.mark.anyio
async def test_an_empty_selection_reads_and_changes_nothing() -> None:
    catalog = McpCatalog([scripted("s1")])
    registry = ToolRegistry([user_entry("my_tool")])
    async with catalog.running(prewarm=False):
        report = sync_mcp_tools_to_registry(registry, catalog, [])
        await anyio.wait_all_tasks_blocked()
        assert (report.registered, report.evicted) == ([], [])
        assert catalog.status("s1").state == "cold"  # no read, so no warm was started
        sync_mcp_tools_to_registry(registry, catalog)  # a full sync reads: the cold server warms
        await anyio.wait_all_tasks_blocked()
        assert catalog.status("s1").state in ("connecting", "connected")
    assert registry.snapshot().names() == ["my_tool"]


@pytest.mark.anyio
async def test_resolve_modes_disabled_manual_and_auto() -> None:
    catalog = seeded(
        {"s1": [tool("a"), tool("b")], "s2": [tool("c")], "off": [tool("d")]},
        s2={"disabled_tools": ["c"]},
        off={"enabled": False},
    )
    disabled = AssistantSettings(mcp_mode="disabled", mcp_server_ids=("s1",))
    assert await resolve_assistant_mcp_tool_ids(disabled, catalog) == []
    assert await resolve_assistant_mcp_tool_ids(AssistantSettings(mcp_mode="manual"), catalog) == []
    manual = AssistantSettings(mcp_mode="manual", mcp_server_ids=("s1", "off"))
    assert await resolve_assistant_mcp_tool_ids(manual, catalog) == ["mcp__s1__a", "mcp__s1__b"]
    auto = AssistantSettings(mcp_mode="auto", disabled_tools=frozenset({"s1/b"}))
    assert await resolve_assistant_mcp_tool_ids(auto, catalog) == ["mcp__s1__a"]


@pytest.mark.anyio
async def test_resolve_warms_a_cold_server_and_does_not_wait_past_the_bound() -> None:
    dead = scripted("dead", "no-init", connect_timeout=60)
    catalog = McpCatalog([scripted("live", tools=2), dead])
    auto = AssistantSettings(mcp_mode="auto")
    async with catalog.running(prewarm=False):
        with anyio.fail_after(10):  # "dead" would take its 60 s connect timeout
            ids = await resolve_assistant_mcp_tool_ids(auto, catalog, wait_timeout=2.0)
        assert catalog.status("dead").state == "connecting"
    assert ids == ["mcp__live__tool_0", "mcp__live__tool_1"]


@pytest.mark.anyio
async def test_entry_execute_calls_the_server_and_an_inactive_server_is_refused() -> None:
    catalog = McpCatalog([scripted("s1", tools=1)])
    registry = ToolRegistry()
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("s1")
        sync_mcp_tools_to_registry(registry, catalog)
        entry = registry.get_by_name("mcp__s1__tool_0")
        assert entry is not None
        output = await entry.tool.run({"q": "hi"}, ToolContext(call_id="c1"))
        assert output.as_text() == 'tool_0:{"q": "hi"}'
        assert output.metadata == {"mcp": {"server_id": "s1", "tool": "tool_0", "call_id": "c1"}}
        await catalog.set_enabled("s1", False)
        with pytest.raises(ServerInactive, match="MCP server s1 is not active"):
            await entry.tool.run({"q": "hi"}, ToolContext())


@pytest.mark.anyio
async def test_a_failing_server_keeps_contributing_its_cached_tools(
    tmp_path: Path,
) -> None:
    modes = tmp_path / "modes"
    catalog = McpCatalog([scripted("s1", tools=1, mode_file=modes), scripted("s2", tools=1)])
    registry = ToolRegistry()
    auto = AssistantSettings(mcp_mode="auto")
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("s1")
        await catalog.refresh_tools("s2")
        sync_mcp_tools_to_registry(registry, catalog)
        modes.write_text("exit")
        with pytest.raises(ServerUnavailable):
            await catalog.restart("s1")
        ids = await resolve_assistant_mcp_tool_ids(auto, catalog)
        report = sync_mcp_tools_to_registry(registry, catalog)
    assert ids == ["mcp__s1__tool_0", "mcp__s2__tool_0"]
    assert report.evicted == []
    assert registry.snapshot().names() == ["mcp__s1__tool_0", "mcp__s2__tool_0"]


@pytest.mark.anyio
async def test_giving_up_the_wait_does_not_abort_the_warm(tmp_path: Path) -> None:
    catalog = McpCatalog([scripted("slow", "no-init", connect_timeout=1.0)])
    auto = AssistantSettings(mcp_mode="auto")
    failed = anyio.Event()
    on_status_changed(
        catalog, lambda sid: failed.set() if catalog.status(sid).state == "failed" else None
    )
    async with catalog.running(prewarm=False):
        assert await resolve_assistant_mcp_tool_ids(auto, catalog, wait_timeout=0.2) == []
        assert catalog.status("slow").state == "connecting"
        with anyio.fail_after(5):
            await failed.wait()  # the warm ran on to its own connect timeout
    assert catalog.status("slow").error == (
        "no answer to initialize within 1s (raise first_connect_timeout in [servers.slow])"
    )


def test_two_servers_exposing_search_get_distinct_names() -> None:
    registry = ToolRegistry()
    report = sync_mcp_tools_to_registry(
        registry, seeded({"srvA": [tool("search")], "srvB": [tool("search")]})
    )
    assert report.registered == ["mcp__srvA__search", "mcp__srvB__search"]
    assert registry.resolve_source("mcp__srvA__search") == ToolSource("srvA", "search")
    assert registry.resolve_source("mcp__srvB__search") == ToolSource("srvB", "search")


def test_server_tools_named_like_builtins_or_meta_tools_never_shadow_them() -> None:
    builtins = [
        ToolEntry(name=name, namespace=ns, tool=Tool(description="built-in"))
        for name, ns in (("web_fetch", "web"), ("tool_invoke", "meta"), ("tool_exec", "meta"))
    ]
    registry = ToolRegistry(builtins)
    catalog = seeded({"s1": [tool("web_fetch"), tool("tool_invoke"), tool("tool_exec")]})
    report = sync_mcp_tools_to_registry(registry, catalog)
    assert report.registered == ["mcp__s1__tool_exec", "mcp__s1__tool_invoke", "mcp__s1__web_fetch"]
    assert report.collisions == []
    for name in ("web_fetch", "tool_invoke", "tool_exec"):
        entry = registry.get_by_name(name)
        assert entry is not None
        assert (entry.namespace in ("web", "meta"), entry.tool.description) == (True, "built-in")
        assert entry.source is None


def test_names_that_mangle_alike_stay_distinct_and_valid() -> None:
    catalog = seeded({"s1": [tool("a.b"), tool("a_b"), tool("a-b")]})
    registry = ToolRegistry()
    report = sync_mcp_tools_to_registry(registry, catalog)
    assert len(report.registered) == 3
    assert report.collisions == []
    assert "mcp__s1__a_b" in report.registered
    assert all(is_valid_wire_name(name) for name in report.registered)
    sources = sorted(
        s.tool_name for n in report.registered if (s := registry.resolve_source(n)) is not None
    )
    assert sources == ["a-b", "a.b", "a_b"]


def test_tools_of_a_server_removed_from_the_config_are_evicted() -> None:
    registry = ToolRegistry([user_entry("my_tool")])
    sync_mcp_tools_to_registry(registry, seeded({"s1": [tool("a")], "s2": [tool("b")]}))
    report = sync_mcp_tools_to_registry(registry, seeded({"s2": [tool("b")]}))
    assert report.evicted == ["mcp__s1__a"]
    assert registry.snapshot().names() == ["mcp__s2__b", "my_tool"]


def test_different_mcp_tools_claiming_one_name_are_all_excluded_and_others_kept() -> None:
    # A stale entry from another identity holds the name this server's tool maps to.
    impostor = ToolEntry(
        name="mcp__s1__search",
        namespace="mcp:s9",
        tool=Tool(description="old"),
        source=ToolSource("s9", "search"),
    )
    registry = ToolRegistry([impostor, user_entry("my_tool")])
    catalog = seeded({"s1": [tool("search"), tool("fetch")], "s9": [tool("other")]})
    report = sync_mcp_tools_to_registry(registry, catalog)
    assert [(c.name, c.sources) for c in report.collisions] == [
        ("mcp__s1__search", (ToolSource("s1", "search"), ToolSource("s9", "search")))
    ]
    assert report.evicted == ["mcp__s1__search"]
    assert registry.snapshot().names() == ["mcp__s1__fetch", "mcp__s9__other", "my_tool"]


def test_a_selection_never_evicts_other_namespaces_or_other_servers() -> None:
    catalog = seeded({"s1": [tool("a"), tool("b")], "s2": [tool("c")]})
    registry = ToolRegistry([user_entry("my_tool")])
    sync_mcp_tools_to_registry(registry, catalog)
    report = sync_mcp_tools_to_registry(registry, catalog, ["mcp__s1__a"])
    assert (report.registered, report.evicted) == (["mcp__s1__a"], [])
    assert registry.snapshot().names() == ["mcp__s1__a", "mcp__s1__b", "mcp__s2__c", "my_tool"]


def test_camel_case_and_slugged_ids_register_when_selected() -> None:
    catalog = seeded({"gitHub": [tool("listRepos")], "my-server": [tool("do.it")]})
    slugged = mcp_tool_name("my-server", None, "do.it")
    assert slugged.startswith("mcp__myServer__doIt__")
    registry = ToolRegistry()
    report = sync_mcp_tools_to_registry(registry, catalog, ["mcp__gitHub__listRepos", slugged])
    assert report.registered == sorted(["mcp__gitHub__listRepos", slugged])
    assert registry.resolve_source(slugged) == ToolSource("my-server", "do.it")


def test_the_library_and_the_config_share_one_default_mcp_mode_auto() -> None:
    from pegboard.config import ProfileConfig

    assert AssistantSettings().mcp_mode == "auto"
    assert ProfileConfig().to_settings().mcp_mode == "auto"


@pytest.mark.anyio
async def test_disabled_mode_and_an_unlinked_manual_assistant_never_touch_a_server(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log"
    catalog = McpCatalog([scripted("s1", tools=1, log=log)])
    async with catalog.running(prewarm=False):
        disabled = AssistantSettings(mcp_mode="disabled", mcp_server_ids=("s1",))
        assert await resolve_assistant_mcp_tool_ids(disabled, catalog) == []
        assert (
            await resolve_assistant_mcp_tool_ids(AssistantSettings(mcp_mode="manual"), catalog)
            == []
        )
        await anyio.wait_all_tasks_blocked()
        assert catalog.status("s1").state == "cold"
        linked = AssistantSettings(mcp_mode="manual", mcp_server_ids=("s1",))  # linked: warms
        assert await resolve_assistant_mcp_tool_ids(linked, catalog) == ["mcp__s1__tool_0"]
    assert log.read_text().count("pid:") == 1


def test_a_tool_name_over_64_characters_is_shortened_deterministically() -> None:
    long_name = "fetch_" + "very_" * 20 + "long"
    registry = ToolRegistry()
    report = sync_mcp_tools_to_registry(registry, seeded({"s1": [tool(long_name)]}))
    (wire,) = report.registered
    assert wire == mcp_tool_name("s1", None, long_name)
    assert len(wire) <= 64
    assert is_valid_wire_name(wire)
    assert registry.resolve_source(wire) == ToolSource("s1", long_name)

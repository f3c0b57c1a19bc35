import logging
import threading

import pytest

from pegboard.core.entry import ToolEntry, ToolSource
from pegboard.core.registry import NameCollision, RegistrySnapshot, ToolRegistry
from pegboard.core.scope import AssistantSettings, ToolApplyScope
from pegboard.core.tool import Tool


def entry(
    name: str,
    namespace: str = "user",
    description: str = "",
    *,
    label: str | None = None,
    applies: object = None,
    source: ToolSource | None = None,
) -> ToolEntry:
    return ToolEntry(
        name,
        namespace,
        Tool(description or f"Tool {name}."),
        description=description,
        namespace_label=label,
        applies=applies,  # type: ignore[arg-type]
        source=source,
    )


def names(entries: list[ToolEntry]) -> list[str]:
    return [e.name for e in entries]


def test_get_by_name_and_has() -> None:
    registry = ToolRegistry([entry("web_search", "web")])
    found = registry.get_by_name("web_search")
    assert found is not None
    assert found.namespace == "web"
    assert registry.has("web_search")
    assert registry.get_by_name("nope") is None
    assert not registry.has("nope")


def test_registering_the_same_name_replaces_and_keeps_one_entry() -> None:
    registry = ToolRegistry()
    registry.register(entry("t", description="old"))
    registry.register(entry("t", description="new"))
    assert len(registry) == 1
    replaced = registry.get_by_name("t")
    assert replaced is not None
    assert replaced.description == "new"


def test_deregister_returns_true_then_false() -> None:
    registry = ToolRegistry([entry("t")])
    assert registry.deregister("t") is True
    assert registry.deregister("t") is False
    assert len(registry) == 0


def test_select_active_includes_entries_without_applies_and_filters_by_predicate() -> None:
    registry = ToolRegistry(
        [
            entry("always"),
            entry("web_search", applies=lambda s: s.assistant.enable_web_search),
            entry("mcp__s1__t", applies=lambda s: "mcp__s1__t" in s.mcp_tool_ids),
        ]
    )
    assert names(registry.select_active(ToolApplyScope())) == ["always"]
    scope = ToolApplyScope(
        assistant=AssistantSettings(enable_web_search=True), mcp_tool_ids=frozenset({"mcp__s1__t"})
    )
    assert names(registry.select_active(scope)) == ["always", "mcp__s1__t", "web_search"]


def test_select_active_stays_sorted_after_deregister_and_re_register() -> None:
    registry = ToolRegistry([entry(n) for n in ["charlie", "alpha", "bravo"]])
    registry.deregister("alpha")
    registry.register(entry("delta"))
    registry.register(entry("alpha"))
    assert names(registry.select_active(ToolApplyScope())) == ["alpha", "bravo", "charlie", "delta"]


def test_throwing_applies_makes_the_entry_inactive_and_logs_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(scope: ToolApplyScope) -> bool:
        raise RuntimeError("settings unavailable")

    registry = ToolRegistry([entry("fine"), entry("broken", applies=broken)])
    with caplog.at_level(logging.WARNING, logger="pegboard.registry"):
        active = registry.select_active(ToolApplyScope())
    assert names(active) == ["fine"]
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            "applies() of tool broken raised RuntimeError('settings unavailable'); "
            "treating it as inactive",
        )
    ]


def test_get_all_is_sorted_and_filters_case_insensitively_with_and() -> None:
    registry = ToolRegistry(
        [
            entry("web_search", "web", "Search the WEB"),
            entry("kb_search", "kb", "Search knowledge bases"),
            entry("mcp__gm__send", "mcp:gm-1", "Send mail", label="mcp:Gmail"),
            entry("kb_list", "kb", "List bases"),
        ]
    )
    assert names(registry.get_all()) == ["kb_list", "kb_search", "mcp__gm__send", "web_search"]
    assert names(registry.get_all(query="SEARCH")) == ["kb_search", "web_search"]
    assert names(registry.get_all(query="the web")) == ["web_search"]
    assert names(registry.get_all(query="gmail")) == ["mcp__gm__send"]  # via the label
    assert names(registry.get_all(namespace="kb")) == ["kb_list", "kb_search"]
    assert names(registry.get_all(namespace="mcp:Gmail")) == ["mcp__gm__send"]
    assert names(registry.get_all(namespace="mcp:gm-1")) == ["mcp__gm__send"]
    assert names(registry.get_all(query="search", namespace="kb")) == ["kb_search"]
    assert registry.get_all(query="search", namespace="mcp:Gmail") == []


def test_get_by_namespace_groups_by_label_sorted_and_forwards_filters() -> None:
    registry = ToolRegistry(
        [
            entry("web_search", "web"),
            entry("kb_search", "kb"),
            entry("kb_list", "kb"),
            entry("mcp__gm__send", "mcp:gm-1", label="mcp:Gmail"),
        ]
    )
    groups = registry.get_by_namespace()
    assert {label: names(group) for label, group in groups.items()} == {
        "kb": ["kb_list", "kb_search"],
        "mcp:Gmail": ["mcp__gm__send"],
        "web": ["web_search"],
    }
    assert list(groups) == ["kb", "mcp:Gmail", "web"]
    filtered = registry.get_by_namespace(query="search")
    assert {label: names(group) for label, group in filtered.items()} == {
        "kb": ["kb_search"],
        "web": ["web_search"],
    }


def test_source_map_resolves_wire_names_and_reports_collisions(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, second = ToolSource("s1", "send"), ToolSource("s2", "send")
    registry = ToolRegistry([entry("mcp__x__send", source=first)])
    assert registry.resolve_source("mcp__x__send") == first
    assert registry.snapshot().name_for(first) == "mcp__x__send"
    with caplog.at_level(logging.WARNING, logger="pegboard.registry"):
        registry.register(entry("mcp__x__send", source=second))
    assert registry.collisions == [NameCollision("mcp__x__send", kept=second, replaced=first)]
    assert registry.resolve_source("mcp__x__send") == second
    assert registry.snapshot().name_for(first) is None
    assert len(caplog.records) == 1
    registry.register(entry("mcp__x__send", source=second))  # same identity: no collision
    assert len(registry.collisions) == 1


def test_subscribers_get_each_new_snapshot_and_a_failing_one_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ToolRegistry()
    seen: list[tuple[int, list[str]]] = []

    def broken(snap: RegistrySnapshot) -> None:
        raise ValueError("listener bug")

    registry.subscribe(broken)
    unsubscribe = registry.subscribe(lambda s: seen.append((s.version, names(s.entries()))))
    with caplog.at_level(logging.ERROR, logger="pegboard.registry"):
        registry.register(entry("a"))
        registry.register_many([entry("b"), entry("c")])
        assert registry.deregister("missing") is False
        registry.deregister("a")
    unsubscribe()
    registry.register(entry("d"))
    assert seen == [(1, ["a"]), (2, ["a", "b", "c"]), (3, ["b", "c"])]
    assert [r.getMessage() for r in caplog.records] == ["RegistryChanged subscriber failed"] * 4


def test_a_snapshot_is_unaffected_by_later_writes() -> None:
    registry = ToolRegistry([entry("a")])
    snap = registry.snapshot()
    registry.register(entry("b"))
    registry.deregister("a")
    assert names(snap.entries()) == ["a"]
    assert names(registry.get_all()) == ["b"]
    assert registry.version == snap.version + 2


def test_readers_see_consistent_snapshots_while_a_thread_registers() -> None:
    registry = ToolRegistry()
    done = threading.Event()
    failures: list[str] = []

    def writer() -> None:
        try:
            for i in range(300):
                # Pairs are added and removed in one batch: no reader may see half a pair.
                registry.register_many([entry(f"a{i:03}"), entry(f"b{i:03}")])
                if i % 3 == 0:
                    registry.deregister_many([f"a{i:03}", f"b{i:03}"])
        finally:
            done.set()

    def reader() -> None:
        last_version = -1
        while not done.is_set() or last_version < registry.version:
            snap = registry.snapshot()
            listed = names(snap.entries())
            a_side = [n[1:] for n in listed if n.startswith("a")]
            b_side = [n[1:] for n in listed if n.startswith("b")]
            if a_side != b_side or listed != sorted(listed) or snap.version < last_version:
                failures.append(f"inconsistent snapshot v{snap.version}: {listed[:6]}")
                return
            last_version = snap.version

    threads = [threading.Thread(target=reader) for _ in range(3)]
    threads.append(threading.Thread(target=writer))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    assert failures == []
    assert len(registry) == 2 * 200

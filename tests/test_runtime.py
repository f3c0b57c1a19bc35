"""ToolRuntime: config -> catalog cache -> registry -> the profile's exposed tools (in process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomli_w

from pegboard.config import LoadedConfig, load_config
from pegboard.mcp import SqliteCatalogStore, StoredServer
from pegboard.runtime import SEARCH_INDEX_DIR, RuntimeOptions, ToolRuntime

pytestmark = pytest.mark.anyio


def _tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": f"{name} things", "inputSchema": {"type": "object"}}


def _loaded(tmp_path: Path, **extra: Any) -> LoadedConfig:
    servers = {"a": {"command": "/nonexistent/a"}, "b": {"command": "/nonexistent/b"}}
    config = {"data_dir": str(tmp_path / "data"), "servers": servers} | extra
    path = tmp_path / "config.toml"
    path.write_text(tomli_w.dumps(config), encoding="utf-8")
    loaded = load_config(path)
    store = SqliteCatalogStore(loaded.catalog_path)
    for sid, names in (("a", ["read", "write"]), ("b", ["search"])):
        fingerprint = loaded.config.servers[sid].fingerprint
        tools = tuple(_tool(n) for n in names)
        store.put(StoredServer(sid, fingerprint=fingerprint, tools=tools, fetched_at=1.0))
    store.close()
    return loaded


def _names(runtime: ToolRuntime) -> list[str]:
    return [t.name for t in runtime.surface.list_tools()]


def test_the_default_profile_exposes_every_enabled_servers_cached_tools(tmp_path: Path) -> None:
    runtime = ToolRuntime(_loaded(tmp_path), RuntimeOptions(prewarm=False))

    assert _names(runtime) == ["mcp__a__read", "mcp__a__write", "mcp__b__search"]


def test_the_listing_is_built_on_its_first_use(tmp_path: Path) -> None:
    # `servers status` reads the catalog and the registry: no search index, no listing.
    runtime = ToolRuntime(_loaded(tmp_path), RuntimeOptions(prewarm=False))

    assert runtime.catalog.status("a").tool_count == 2
    assert runtime.registry.get_by_name("mcp__b__search") is not None
    assert "surface" not in vars(runtime)
    assert "index" not in vars(runtime)
    runtime.resync()  # a re-sync meanwhile builds nothing more
    assert "surface" not in vars(runtime)
    assert _names(runtime) == ["mcp__a__read", "mcp__a__write", "mcp__b__search"]


def test_a_manual_profile_exposes_linked_servers_minus_disabled_tools(tmp_path: Path) -> None:
    profile = {"mcp_mode": "manual", "mcp_servers": ["a"], "disabled_tools": ["a/write"]}
    loaded = _loaded(tmp_path, profiles={"work": profile})

    runtime = ToolRuntime(loaded, RuntimeOptions(profile="work", prewarm=False))

    assert _names(runtime) == ["mcp__a__read"]


def test_profile_force_prompt_tools_are_gated(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, profiles={"default": {"force_prompt_tools": ["mcp__b__search"]}})

    runtime = ToolRuntime(loaded, RuntimeOptions(prewarm=False))
    entry = runtime.registry.get_by_name("mcp__b__search")

    assert entry is not None
    assert (entry.defer, entry.tool.needs_approval) == ("never", True)


async def test_disabling_a_server_in_the_config_while_running_removes_its_tools(
    tmp_path: Path,
) -> None:
    loaded = _loaded(tmp_path)
    runtime = ToolRuntime(loaded, RuntimeOptions(prewarm=False))
    heard: list[int] = []
    runtime.surface.subscribe(lambda: heard.append(1))
    raw = dict(loaded.raw)
    raw["servers"] = raw["servers"] | {"b": {"command": "/nonexistent/b", "enabled": False}}
    loaded.path.write_text(tomli_w.dumps(raw), encoding="utf-8")

    async with runtime.running():
        await runtime.apply_config(load_config(loaded.path))

    assert _names(runtime) == ["mcp__a__read", "mcp__a__write"]
    assert heard == [1]


def test_a_profile_gate_that_matches_no_tool_is_reported_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    loaded = _loaded(tmp_path, profiles={"default": {"force_prompt_tools": ["search"]}})

    with caplog.at_level("WARNING", logger="pegboard.gateway"):
        runtime = ToolRuntime(loaded, RuntimeOptions(prewarm=False))
        runtime.resync()

    expected = (
        "Assistant force_prompt_tools lists 'search', which matches no registered tool, so "
        "nothing is gated. Did you mean: mcp__b__search (b/search)? Use the wire name "
        "(mcp__<server>__<tool>) or '<server_id>/<tool name>'."
    )
    assert runtime.gate_problems == (expected,)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [f"approval gate matches no tool: {expected}"]


def test_gates_that_all_match_report_nothing(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, profiles={"default": {"force_prompt_tools": ["b/search"]}})

    runtime = ToolRuntime(loaded, RuntimeOptions(prewarm=False))

    assert runtime.gate_problems == ()


def test_meta_search_defaults_to_the_dense_index_with_cached_vectors(tmp_path: Path) -> None:
    from pegboard.search import dense_signals
    from pegboard.search.stored import StoredIndex
    from pegboard.search.synced import registry_index

    loaded = _loaded(tmp_path)

    runtime = ToolRuntime(loaded, RuntimeOptions(prewarm=False))
    assert not (loaded.data_dir / "vectors").exists()  # built by the first search, not here

    exposed = frozenset(e.name for e in runtime.surface.tools.entries())
    query = ["look something up"]
    hits = [hit.name for hit in runtime.index.search(query, limit=3, allowed=exposed)]
    index = registry_index(runtime.registry)  # the one the runtime's first search built
    assert isinstance(index, StoredIndex)
    assert index.dense
    assert set(hits) <= {"mcp__a__read", "mcp__a__write", "mcp__b__search"}
    assert "mcp__b__search" in hits
    cached = {p.name for p in (loaded.data_dir / "vectors").iterdir()}
    assert cached == {f"{s.embedder.model_id}.npz" for s in dense_signals()}
    # the built index is kept for the next process of this catalog
    assert [p.suffix for p in (loaded.data_dir / SEARCH_INDEX_DIR).iterdir()] == [".index"]


def test_meta_search_lexical_uses_the_index_without_models(tmp_path: Path) -> None:
    from pegboard.search.stored import StoredIndex
    from pegboard.search.synced import registry_index

    loaded = _loaded(tmp_path, meta={"search": "lexical"})
    runtime = ToolRuntime(loaded, RuntimeOptions(prewarm=False))

    runtime.index.search(["read"], limit=3)
    index = registry_index(runtime.registry)  # the one the runtime's first search built
    assert isinstance(index, StoredIndex)
    assert not index.dense
    assert not (loaded.data_dir / "vectors").exists()


def test_the_context_window_comes_from_the_option_then_the_profile_then_the_file(
    tmp_path: Path,
) -> None:
    profiles = {"small": {"context_window": 8000}}
    loaded = _loaded(tmp_path, context_window=128000, profiles=profiles)

    def window(**options: Any) -> int | None:
        return ToolRuntime(loaded, RuntimeOptions(prewarm=False, **options)).context_window

    assert window() == 128000
    assert window(profile="small") == 8000
    assert window(profile="small", context_window=1000) == 1000


def test_a_profile_may_let_destructive_tools_run_without_asking(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, profiles={"trusting": {"destructive_tools": "allow"}})

    runtime = ToolRuntime(loaded, RuntimeOptions(profile="trusting", prewarm=False))

    assert runtime.settings.destructive_tools == "allow"


def test_tools_excluded_by_a_name_collision_are_kept_for_the_cli_and_logged_at_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from pegboard.core.entry import ToolEntry
    from pegboard.core.tool import Tool

    runtime = ToolRuntime(_loaded(tmp_path), RuntimeOptions(prewarm=False))
    assert runtime.excluded() == []
    runtime.registry.register(ToolEntry("mcp__a__read", "plugin", Tool(description="mine")))
    with caplog.at_level("WARNING", logger="pegboard.mcp.sync"):
        runtime.resync()
    [collision] = runtime.excluded()
    assert runtime.excluded("a") == [collision]
    assert runtime.excluded("b") == []
    assert collision.describe() == (
        "mcp__a__read of a/read is taken by a registered non-MCP tool; (rename one tool, or "
        "disable it in its server's disabled_tools)"
    )
    assert collision.as_json() == {
        "wire_name": "mcp__a__read",
        "claimed_by": ["a/read"],
        "reason": "wire name collision",
    }
    warnings = [r.getMessage() for r in caplog.records if r.name == "pegboard.mcp.sync"]
    assert warnings == [f"MCP wire name {collision.describe()}"]


def _model(window: int | None) -> dict[str, Any]:
    table: dict[str, Any] = {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    return table if window is None else table | {"context_window": window}


def test_a_chat_models_window_does_not_size_the_runtime(tmp_path: Path) -> None:
    models = {"small": _model(8_000), "big": _model(32_000)}
    loaded = _loaded(tmp_path, models=models, default_model="small")

    runtime = ToolRuntime(loaded, RuntimeOptions(prewarm=False))

    # `pegboard serve`'s client runs its own model: the 200k default applies
    assert (runtime.context_window, runtime.surface.context_window) == (None, None)


def test_the_option_the_profile_and_the_top_level_window_size_the_runtime(tmp_path: Path) -> None:
    loaded = _loaded(tmp_path, context_window=50_000, models={"m": _model(8_000)})
    profiled = _loaded(
        tmp_path, context_window=50_000, profiles={"default": {"context_window": 40_000}}
    )

    from_config = ToolRuntime(loaded, RuntimeOptions(prewarm=False))
    from_option = ToolRuntime(loaded, RuntimeOptions(prewarm=False, context_window=30_000))
    from_profile = ToolRuntime(profiled, RuntimeOptions(prewarm=False))

    assert (from_config.context_window, from_option.context_window) == (50_000, 30_000)
    assert from_profile.context_window == 40_000


async def test_switching_tool_exec_while_serving_asks_for_a_restart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    loaded = _loaded(tmp_path)
    runtime = ToolRuntime(loaded, RuntimeOptions(prewarm=False))
    raw = dict(loaded.raw) | {"meta": {"tool_exec": True}}
    loaded.path.write_text(tomli_w.dumps(raw), encoding="utf-8")

    with caplog.at_level("WARNING", logger="pegboard.gateway"):
        async with runtime.running():
            await runtime.apply_config(load_config(loaded.path))

    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == ["[meta] tool_exec was switched: restart pegboard serve to apply it"]
    assert runtime.sandbox is None
    assert "tool_exec" not in runtime.surface.tools.names


def test_tool_exec_with_deferral_off_is_reported_as_not_offered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    loaded = _loaded(tmp_path)
    raw = dict(loaded.raw) | {"meta": {"tool_exec": True, "defer": False}}
    loaded.path.write_text(tomli_w.dumps(raw), encoding="utf-8")

    with caplog.at_level("WARNING", logger="pegboard.gateway"):
        runtime = ToolRuntime(load_config(loaded.path), RuntimeOptions(prewarm=False))

    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        "[meta] tool_exec is on but [meta] defer = false: tool_exec is offered only "
        "beside the meta-tools of deferred tools"
    ]
    assert "tool_exec" not in runtime.surface.tools.names


async def test_a_calls_scope_is_made_again_once_the_profile_selection_or_window_changed(
    tmp_path: Path,
) -> None:
    loaded = _loaded(tmp_path)
    runtime = ToolRuntime(loaded, RuntimeOptions(prewarm=False))
    first = runtime.scope()
    assert runtime.scope() is first  # nothing changed: the same (immutable) scope
    raw = dict(loaded.raw) | {"profiles": {"default": {"disabled_tools": ["a/write"]}}}
    loaded.path.write_text(tomli_w.dumps(raw), encoding="utf-8")
    async with runtime.running():
        await runtime.apply_config(load_config(loaded.path))

    scope = runtime.scope()
    assert scope.assistant is runtime.settings
    assert scope.assistant.is_tool_disabled("mcp__a__write", "a", "write")
    assert not first.assistant.is_tool_disabled("mcp__a__write", "a", "write")
    runtime.selected = frozenset({"mcp__a__read"})
    assert runtime.scope().mcp_tool_ids == {"mcp__a__read"}
    runtime.context_window = 1000
    model = runtime.scope().model
    assert model is not None
    assert model.context_window == 1000

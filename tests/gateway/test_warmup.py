"""tool_search's index is built in the background once the gateway has answered, so the
model's first search does not pay for it; nothing is built when nothing is deferred."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from pegboard.core import quick_check, schema
from pegboard.core.tokens import BpeTokenCounter, default_token_counter
from pegboard.deferral.definitions import DEFINITIONS
from pegboard.deferral.tool_search import search_pool
from pegboard.gateway.warmup import (
    compile_meta_tool_checks,
    count_search_lines,
    ready_meta_tools,
    rehearse_search,
    warm_search_index,
)
from tests.gateway.harness import (
    STARTUP_BOUND,
    run_cli,
    sdk_server,
    serve_stdio,
    victim_server,
    write_config,
)
from tests.toolsets.test_routes import config, runtime_of

pytestmark = pytest.mark.anyio
__all__ = ["config"]  # the fixture: a 30-tool SDK server, refreshed into the cache, deferred


def _has_files(path: Path) -> bool:
    return path.exists() and any(path.iterdir())


async def _appears(path: Path, within: float) -> bool:
    """Whether ``path`` gets a file within ``within`` seconds (polled)."""
    for _ in range(int(within / 0.05)):
        if _has_files(path):
            return True
        await anyio.sleep(0.05)
    return _has_files(path)


async def test_serve_builds_the_search_index_after_answering_before_any_search(
    tmp_path: Path,
) -> None:
    write_config(
        tmp_path, {"servers": {"toolbox": sdk_server(), "bulk": victim_server("--tools", "30")}}
    )
    code, _, _ = await run_cli(tmp_path, "servers", "refresh")
    assert code == 0
    vectors = tmp_path / "data" / "vectors"  # written when the index embeds the catalog
    assert not vectors.exists()

    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path, "--context-window", "8000") as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            assert "tool_search" in listed  # deferred: a search can come
            assert await _appears(vectors, within=STARTUP_BOUND / 2)


async def test_a_later_serve_loads_the_stored_index_and_builds_nothing(tmp_path: Path) -> None:
    write_config(
        tmp_path, {"servers": {"toolbox": sdk_server(), "bulk": victim_server("--tools", "30")}}
    )
    code, _, _ = await run_cli(tmp_path, "servers", "refresh")
    assert code == 0
    stored = tmp_path / "data" / "search-index"

    found = []
    for _ in range(2):
        with anyio.fail_after(STARTUP_BOUND):
            async with serve_stdio(tmp_path, "--context-window", "8000") as client:
                await client.list_tools()
                result = await client.call_tool("tool_search", {"query": "echo the text"})
                found.append([c.text for c in result.content if hasattr(c, "text")])
                (index_file,) = stored.glob("*.index")  # the build (a child's) is done
                found.append(index_file.stat().st_ino)
    first_hits, first_inode, later_hits, later_inode = found
    assert later_hits == first_hits
    assert "mcp__toolbox__echo" in first_hits[0]
    assert later_inode == first_inode  # loaded, not written again
    assert (tmp_path / "data" / "token-counts.bin").stat().st_size > 0


async def test_without_deferral_serve_builds_no_index(tmp_path: Path) -> None:
    write_config(tmp_path, {"servers": {"toolbox": sdk_server()}})
    code, _, _ = await run_cli(tmp_path, "servers", "refresh")
    assert code == 0

    with anyio.fail_after(STARTUP_BOUND):
        async with serve_stdio(tmp_path, "--no-defer") as client:
            assert "tool_search" not in [t.name for t in (await client.list_tools()).tools]
            await client.call_tool("mcp__toolbox__echo", {"text": "hi"})
            assert not await _appears(tmp_path / "data" / "vectors", within=3)


class _Counting:
    """An index that records its warm-up (the search run after the build)."""

    def __init__(self) -> None:
        self.built = anyio.Event()
        self.token = anyio.lowlevel.current_token()

    def __len__(self) -> int:
        return 0

    def search(self, queries: list[str], *, limit: int = 8) -> list[object]:
        anyio.from_thread.run_sync(self.built.set, token=self.token)
        return []


async def test_the_build_waits_for_the_first_answer_and_for_a_search_to_be_offered() -> None:
    answered = anyio.Event()
    index = _Counting()
    offered = True
    async with anyio.create_task_group() as tg:
        tg.start_soon(warm_search_index, index, answered, lambda: offered)
        await anyio.sleep(0.3)
        assert not index.built.is_set()  # no answer yet, and the wait (2 s) not over
        answered.set()
        with anyio.fail_after(10):
            await index.built.wait()

    offered = False
    idle = _Counting()
    done = anyio.Event()
    done.set()
    await warm_search_index(idle, done, lambda: offered)
    await anyio.sleep(0.3)
    assert not idle.built.is_set()


async def test_after_the_warm_up_a_search_loads_no_tokenizer_for_its_lines(config: Path) -> None:
    queries = ["add two numbers", "echo a text", "查询天气", "fail with a reason", "media"]
    with anyio.fail_after(STARTUP_BOUND):
        async with runtime_of(config, []) as runtime:
            pool = runtime.surface.exposition.pool  # type: ignore[union-attr]
            assert pool is not None
            count_search_lines(runtime.surface)
            # A later process: only what this one counted (kept in token-counts.bin).
            later = BpeTokenCounter()
            later.seed(default_token_counter().counts())  # type: ignore[attr-defined]
            texts = [search_pool(replace(pool, counter=later), [q]).as_text() for q in queries]

    assert later._tokenizer is None  # every line was counted before: no encoding loaded
    assert all("- mcp__toolbox__" in t for t in texts)


def test_after_the_warm_up_a_meta_tool_call_compiles_no_schema() -> None:
    # The first check of a schema compiles it (the metaschema check, milliseconds) and its
    # quick check (fastjsonschema's generated code, on the event loop): both readied in the
    # warm-up thread, the client's first tool_search finds them compiled.
    schema._compile.cache_clear()
    quick_check._compile.cache_clear()
    compile_meta_tool_checks()
    compiled = schema._compile.cache_info().misses, quick_check._compile.cache_info().misses
    schema.validate_arguments(DEFINITIONS["tool_search"].input_schema, {"query": "weather"})
    schema.validate_arguments(DEFINITIONS["tool_inspect"].input_schema, {"name": "x"})
    after = schema._compile.cache_info().misses, quick_check._compile.cache_info().misses
    assert after == compiled
    assert quick_check._compile.cache_info().currsize == len(DEFINITIONS)


async def test_the_rehearsed_search_matches_index_terms_as_a_client_search_does(
    config: Path,
) -> None:
    # The build's own warm-up query ("warm up") matches no term of the index, so the first
    # scoring of postings waited for the client's first search; the rehearsal searches the
    # pool for a deferred tool's own summary line and finds that tool.
    with anyio.fail_after(STARTUP_BOUND):
        async with runtime_of(config, []) as runtime:
            pool = runtime.surface.exposition.pool  # type: ignore[union-attr]
            assert pool is not None
            rehearsed = rehearse_search(runtime.surface)

    assert rehearsed is not None
    assert rehearsed.metadata["tool_references"][0] == pool.deferred[0].name


async def test_every_listing_has_the_lookups_of_a_call_built_before_any_call(
    config: Path,
) -> None:
    # Each is linear in the tools and a refresh makes a new listing: built on first use, the
    # first tool_search after every refresh paid both (~3 ms apiece at 5,000 tools).
    with anyio.fail_after(STARTUP_BOUND):
        async with runtime_of(config, []) as runtime:
            listings = [runtime.surface.tools]
            runtime.surface.refresh()
            listings.append(runtime.surface.tools)

    assert listings[0] is not listings[1]
    for listing in listings:
        assert "by_name" in vars(listing)
        pool = listing.exposition.pool  # type: ignore[union-attr]
        assert pool is not None
        assert "deferred_names" in vars(pool)


async def test_after_the_warm_up_the_first_search_answer_lays_out_nothing_new(
    config: Path,
) -> None:
    # The first tools/call answer of a protocol version ran the SDK's serializer over a probe
    # (server._plain_layout) on the event loop, and the meta-tool's schema key was computed
    # by its first call: both readied in the warm-up thread now.
    from pegboard.gateway import server

    server._plain_layout.cache_clear()
    with anyio.fail_after(STARTUP_BOUND):
        async with runtime_of(config, []) as runtime:
            ready_meta_tools(runtime.surface)
            entry = runtime.surface.tools.get("tool_search")
            assert entry is not None
            assert "schema_key" in vars(entry.tool)  # the cached property, computed
    assert server._plain_layout.cache_info().currsize == len(server.VERSIONS)

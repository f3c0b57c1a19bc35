from collections.abc import Iterable, Sequence

import pytest

from pegboard.core.entry import ToolEntry, ToolSource
from pegboard.core.registry import ToolRegistry
from pegboard.core.tokens import default_token_counter
from pegboard.core.tool import ToolContext
from pegboard.deferral import apply_defer_exposition, search_pool
from pegboard.deferral.tool_search import tool_line
from pegboard.search.interface import SearchHit
from pegboard.search.synced import registry_index
from tests.deferral.factories import entry, pool_of, tools_of


def mail(tool: str, description: str) -> ToolEntry:
    return entry(
        f"mcp__gmail__{tool}",
        namespace="mcp:gmail-uuid",
        label="mcp:Gmail",
        defer="always",
        description=description,
        source=ToolSource("gmail-uuid", tool),
    )


def catalog() -> list[ToolEntry]:
    return [
        mail("send_message", "Send an email message to recipients."),
        mail("search_threads", "Search email threads by sender or subject."),
        mail("add_label", "Add a label to an email thread."),
        entry("web_fetch", defer="always", description="Fetch a web page and return its text."),
        entry("web_search", defer="always", description="Search the web with a search engine."),
        entry(
            "weather_now",
            namespace="weather",
            defer="always",
            description="查询城市的实时天气",
        ),
    ]


def test_the_injected_search_tool_is_named_tool_search() -> None:
    registry = ToolRegistry(catalog())
    result = apply_defer_exposition(tools_of(*catalog()), registry, None)
    assert "tool_search" in result.tools


def test_results_are_ranked_and_grouped_by_namespace_label() -> None:
    text = search_pool(pool_of(*catalog()), ["send an email"]).as_text()
    lines = text.splitlines()
    assert lines[0] == "[mcp:Gmail]"
    assert lines[1] == "- mcp__gmail__send_message: Send an email message to recipients."
    assert "gmail-uuid" not in text


def test_several_phrasings_are_merged_into_one_ranking() -> None:
    pool = pool_of(*catalog())
    text = search_pool(pool, ["fetch a page", "send an email"], limit=2).as_text()
    assert set(text.splitlines()) == {
        "[mcp:Gmail]",
        "- mcp__gmail__send_message: Send an email message to recipients.",
        "[web]",
        "- web_fetch: Fetch a web page and return its text.",
    }


def test_inline_tools_are_never_listed() -> None:
    inline = entry("web_lookup", defer="never", description="Search the web quickly.")
    text = search_pool(pool_of(*catalog(), inline=(inline,)), ["search the web"]).as_text()
    assert "web_search" in text
    assert "web_lookup" not in text


@pytest.mark.parametrize("namespace", ["mcp:Gmail", "mcp:gmail-uuid", "gmail", "GMAIL"])
def test_the_namespace_filter_accepts_the_label_or_the_raw_id(namespace: str) -> None:
    lines = search_pool(pool_of(*catalog()), ["search"], namespace=namespace).as_text()
    assert lines.splitlines()[:2] == [
        "[mcp:Gmail]",
        "- mcp__gmail__search_threads: Search email threads by sender or subject.",
    ]
    assert all(line.startswith("- mcp__gmail__") for line in lines.splitlines()[1:])


def test_an_unknown_namespace_lists_the_known_ones() -> None:
    text = search_pool(pool_of(*catalog()), ["x"], namespace="slack").as_text()
    assert text == "No namespace matches 'slack'. Namespaces: mcp:Gmail, weather, web."


def test_no_query_with_a_namespace_browses_it_by_name_a_page_at_a_time() -> None:
    pool = pool_of(*catalog())
    first = search_pool(pool, [], namespace="mcp:Gmail", limit=2)
    assert first.as_text().splitlines() == [
        "[mcp:Gmail]",
        "- mcp__gmail__add_label: Add a label to an email thread.",
        "- mcp__gmail__search_threads: Search email threads by sender or subject.",
        "(1-2 of 3 shown; pass offset=2 for more, or add a query.)",
    ]
    second = search_pool(pool, [], namespace="mcp:Gmail", limit=2, offset=2)
    assert second.as_text().splitlines() == [
        "[mcp:Gmail]",
        "- mcp__gmail__send_message: Send an email message to recipients.",
    ]
    assert second.structured == {
        "tools": [
            {
                "name": "mcp__gmail__send_message",
                "namespace": "mcp:Gmail",
                "description": "Send an email message to recipients.",
            }
        ],
        "offset": 2,
        "total": 3,
    }


def test_no_query_and_no_namespace_lists_the_namespaces_and_the_first_page_of_tools() -> None:
    result = search_pool(pool_of(*catalog()), [], limit=4)
    assert result.as_text().splitlines() == [
        "3 namespaces of deferred tools:",
        "- mcp:Gmail (3 tools)",
        "- weather (1 tool)",
        "- web (2 tools)",
        "Search with a query, or pass `namespace` to list one namespace.",
        "[mcp:Gmail]",
        "- mcp__gmail__add_label: Add a label to an email thread.",
        "- mcp__gmail__search_threads: Search email threads by sender or subject.",
        "- mcp__gmail__send_message: Send an email message to recipients.",
        "[weather]",
        "- weather_now: 查询城市的实时天气",
        "(1-4 of 6 shown; pass offset=4 for more, or add a query.)",
    ]
    assert result.structured["namespaces"] == [
        {"namespace": "mcp:Gmail", "count": 3},
        {"namespace": "weather", "count": 1},
        {"namespace": "web", "count": 2},
    ]
    assert [row["name"] for row in result.structured["tools"]] == [
        "mcp__gmail__add_label",
        "mcp__gmail__search_threads",
        "mcp__gmail__send_message",
        "weather_now",
    ]
    assert (result.structured["offset"], result.structured["total"]) == (0, 6)


def test_the_next_browse_page_has_no_overview_and_a_page_past_the_end_says_so() -> None:
    pool = pool_of(*catalog())
    assert search_pool(pool, [], limit=4, offset=4).as_text().splitlines() == [
        "[web]",
        "- web_fetch: Fetch a web page and return its text.",
        "- web_search: Search the web with a search engine.",
    ]
    past = search_pool(pool, [], limit=4, offset=9)
    assert past.as_text() == "(offset 9 is past the last of 6 tools.)"
    assert past.structured["tools"] == []


def test_a_ranked_search_carries_its_hits_as_structured_content() -> None:
    result = search_pool(pool_of(*catalog()), ["send an email"], limit=1)
    assert result.structured == {
        "tools": [
            {
                "name": "mcp__gmail__send_message",
                "namespace": "mcp:Gmail",
                "description": "Send an email message to recipients.",
            }
        ]
    }
    assert search_pool(pool_of(*catalog()), ["zzqx"]).structured == {"tools": []}


@pytest.mark.anyio
async def test_the_tool_pages_with_offset() -> None:
    registry = ToolRegistry(catalog())
    search = apply_defer_exposition(tools_of(*catalog()), registry, None).tools["tool_search"]
    page = await search.run({"namespace": "web", "limit": 1, "offset": 1}, ToolContext())
    assert page.as_text().splitlines() == [
        "[web]",
        "- web_search: Search the web with a search engine.",
    ]


def test_the_description_says_it_is_tool_discovery_not_web_search() -> None:
    registry = ToolRegistry(catalog())
    search = apply_defer_exposition(tools_of(*catalog()), registry, None).tools["tool_search"]
    assert "tool discovery, NOT web search" in search.description


def test_verbose_adds_the_schema() -> None:
    pool = pool_of(*catalog())
    plain = search_pool(pool, ["fetch a web page"], limit=1).as_text()
    assert "input:" not in plain
    verbose = search_pool(pool, ["fetch a web page"], limit=1, verbose=True).as_text()
    assert verbose.splitlines()[2] == (
        '  input: {"properties":{"limit":{"default":10,"type":"integer"},"query":'
        '{"description":"What to look for","type":"string"}},"required":["query"],'
        '"type":"object"}'
    )


def test_an_empty_result_says_how_to_broaden() -> None:
    text = search_pool(pool_of(*catalog()), ["zzqx"], namespace="web").as_text()
    assert text == (
        "No deferred tool matches 'zzqx' in web. Try fewer or more general words, another "
        "phrasing, a list of phrasings, no `namespace`, or tool_search with no query to browse "
        "the namespaces."
    )


def test_a_chinese_query_finds_a_chinese_description() -> None:
    text = search_pool(pool_of(*catalog()), ["天气"]).as_text()
    assert text.splitlines()[:2] == ["[weather]", "- weather_now: 查询城市的实时天气"]


def test_a_long_summary_is_cut_to_sixty_tokens_with_an_ellipsis() -> None:
    long = entry("verbose_tool", description="word " * 300)
    line = tool_line(long, default_token_counter())
    assert line.startswith("- verbose_tool: word word")
    assert line.endswith("…")
    assert default_token_counter().count_text(line) <= 60


@pytest.mark.anyio
async def test_the_tool_accepts_a_string_or_a_list_query() -> None:
    registry = ToolRegistry(catalog())
    result = apply_defer_exposition(tools_of(*catalog()), registry, None)
    search = result.tools["tool_search"]
    one = await search.run({"query": "send an email", "limit": 1}, ToolContext())
    many = await search.run({"query": ["send an email", ""], "limit": 1}, ToolContext())
    assert one.as_text() == many.as_text()
    assert one.as_text().endswith("mcp__gmail__send_message: Send an email message to recipients.")


def test_the_registry_index_follows_registry_changes_incrementally() -> None:
    registry = ToolRegistry(catalog())
    index = registry_index(registry)
    assert len(index) == 6
    assert registry_index(registry) is index
    registry.register(entry("calendar_create", defer="always", description="Create an event."))
    assert [h.name for h in index.search(["create an event"], limit=1)] == ["calendar_create"]
    registry.deregister("web_fetch")
    assert len(index) == 6
    assert "web_fetch" not in [h.name for h in index.search(["fetch page"], limit=10)]


class ReversedIndex:
    """A pluggable index: every tool matches, in reverse name order."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def upsert(self, entries: Iterable[ToolEntry]) -> None:
        self.names.update(e.name for e in entries)

    def remove(self, names: Iterable[str]) -> None:
        self.names.difference_update(names)

    def __len__(self) -> int:
        return len(self.names)

    def search(
        self,
        queries: Sequence[str],
        *,
        limit: int = 8,
        namespaces: Sequence[str] | None = None,
        allowed: frozenset[str] | None = None,
    ) -> list[SearchHit]:
        names = sorted((n for n in self.names if allowed is None or n in allowed), reverse=True)
        return [SearchHit(n, 1.0) for n in names[:limit]]


def test_any_search_index_implementation_plugs_in() -> None:
    index = ReversedIndex()
    entries = catalog()
    index.upsert(entries)
    text = search_pool(pool_of(*entries, index=index), ["anything"], limit=2).as_text()
    assert text.splitlines() == [
        "[web]",
        "- web_search: Search the web with a search engine.",
        "- web_fetch: Fetch a web page and return its text.",
    ]


def test_a_query_naming_the_namespace_label_finds_its_tools() -> None:
    text = search_pool(pool_of(*catalog()), ["gmail"], limit=3).as_text()
    assert text.splitlines()[0] == "[mcp:Gmail]"
    assert len(text.splitlines()) == 4


@pytest.mark.anyio
async def test_the_default_limit_is_eight_and_limit_raises_it() -> None:
    many = [
        entry(f"web_tool_{i:02}", defer="always", description=f"Search the web, variant {i}.")
        for i in range(12)
    ]
    registry = ToolRegistry(many)
    search = apply_defer_exposition(tools_of(*many), registry, None).tools["tool_search"]
    default = await search.run({"query": "search the web"}, ToolContext())
    wider = await search.run({"query": "search the web", "limit": 11}, ToolContext())
    assert sum(line.startswith("- ") for line in default.as_text().splitlines()) == 8
    assert sum(line.startswith("- ") for line in wider.as_text().splitlines()) == 11

from __future__ import annotations

import random
from typing import Any

from pegboard.core.entry import ToolEntry, ToolSource
from pegboard.core.tool import Tool
from pegboard.search import FusionParams, LexicalIndex, ToolIndex, default_index
from pegboard.search.fusion import interleave
from pegboard.search.interface import SearchHit, SearchIndex


def entry(
    name: str,
    description: str,
    namespace: str = "misc",
    params: dict[str, str] | None = None,
    label: str | None = None,
) -> ToolEntry:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {k: {"type": "string", "description": v} for k, v in (params or {}).items()},
    }
    return ToolEntry(
        name=name,
        namespace=namespace,
        namespace_label=label,
        tool=Tool(description=description, input_schema=schema),
        description=description,
    )


CATALOG = [
    entry("read_file", "Read the contents of a file.", "fs", {"path": "File path to read."}),
    entry("write_file", "Write text to a file, replacing it.", "fs", {"path": "Where to write."}),
    entry("listDirectory", "List the entries of a folder.", "fs", {"path": "Folder."}),
    entry("web_search", "Search the web for pages.", "web", {"query": "Search terms."}),
    entry("bing_search", "使用必应搜索指定的关键词，并返回搜索结果列表", "bing"),
    entry("get_weather", "Current weather forecast for a city.", "weather", {"city": "City."}),
    entry("send_email", "Send an email message.", "mail", {"to": "Recipient address."}),
]


def names(hits: list[SearchHit]) -> list[str]:
    return [h.name for h in hits]


def built() -> LexicalIndex:
    index = LexicalIndex()
    index.upsert(CATALOG)
    return index


def test_default_index_is_an_empty_search_index() -> None:
    index = default_index()
    assert isinstance(index, SearchIndex)
    assert len(index) == 0
    assert index.search(["anything"]) == []


def test_words_of_the_name_outrank_the_same_words_in_a_parameter() -> None:
    index = built()
    index.upsert([entry("copy_text", "Copy some text.", "fs", {"weather": "Weather to copy."})])
    assert names(index.search(["weather"])) == ["get_weather", "copy_text"]
    assert names(index.search(["read file"])) == ["read_file", "write_file"]


def test_camel_case_names_are_split_into_words() -> None:
    assert names(built().search(["list directory"], limit=1)) == ["listDirectory"]


def test_stemming_matches_inflected_query_words() -> None:
    assert names(built().search(["emails sending"], limit=1)) == ["send_email"]


def test_chinese_query_finds_the_chinese_description() -> None:
    assert names(built().search(["搜索关键词"], limit=5)) == ["bing_search"]


def test_namespace_filter_matches_namespace_or_label() -> None:
    index = LexicalIndex()
    index.upsert([*CATALOG, entry("gmail_send", "Send an email.", "mcp:g1", label="mcp:Gmail")])
    assert names(index.search(["send email"], namespaces=["mcp:Gmail"])) == ["gmail_send"]
    assert names(index.search(["send email"], namespaces=["mcp:g1"])) == ["gmail_send"]
    assert names(index.search(["file"], namespaces=["web"])) == []


def test_allowed_filter_restricts_to_the_given_names() -> None:
    hits = built().search(["file"], allowed=frozenset({"write_file", "web_search"}))
    assert names(hits) == ["write_file"]


def test_upsert_replaces_an_entry_and_remove_drops_it() -> None:
    index = built()
    index.upsert([entry("get_weather", "Translate text between languages.", "weather")])
    assert len(index) == len(CATALOG)
    assert names(index.search(["forecast"])) == []
    assert names(index.search(["translate"])) == ["get_weather"]
    index.remove(["get_weather", "no_such_tool"])
    assert len(index) == len(CATALOG) - 1
    assert names(index.search(["translate"])) == []


def test_incremental_updates_rank_like_a_fresh_build() -> None:
    index = LexicalIndex()
    index.upsert(CATALOG[:5])
    index.upsert(CATALOG[5:])
    index.remove(["web_search"])
    index.upsert([CATALOG[3]])
    fresh = built()
    for query in ("read file", "search web", "weather city", "email"):
        assert names(index.search([query])) == names(fresh.search([query]))


def test_readers_keep_the_state_they_started_with() -> None:
    index = built()
    before = index.state.lexical
    index.remove(["read_file"])
    assert "read_file" in before.docs
    assert "read_file" not in index.state.lexical.docs


def test_several_queries_are_interleaved_round_by_round() -> None:
    hits = built().search(["weather forecast", "send email"], limit=2)
    assert names(hits) == ["get_weather", "send_email"]
    assert hits[0].score == hits[1].score == 1.0


def test_each_query_gets_its_best_hit_before_any_query_gets_a_second() -> None:
    index = built()
    assert names(index.search(["read file"])) == ["read_file", "write_file"]
    assert names(index.search(["weather"])) == ["get_weather"]
    hits = index.search(["read file", "weather"], limit=4)
    assert names(hits) == ["read_file", "get_weather", "write_file"]
    assert [h.score for h in hits] == [1.0, 1.0, 0.5]


def test_a_tool_found_by_several_queries_appears_once_at_its_first_place() -> None:
    hits = built().search(["read file", "read the file", "weather"], limit=3)
    assert names(hits) == ["read_file", "get_weather", "write_file"]


def test_interleave_stops_at_the_limit_and_handles_uneven_rankings() -> None:
    assert interleave([["a", "b", "c"], ["d"], []], 3) == [("a", 1.0), ("d", 1.0), ("b", 0.5)]
    assert interleave([["a", "b"], ["b", "a"]], 5) == [("a", 1.0), ("b", 1.0)]
    assert interleave([], 5) == []


def test_equal_scores_are_ordered_by_name() -> None:
    index = LexicalIndex()
    index.upsert([entry(n, "Does the same thing.") for n in ("zeta", "alpha", "mid")])
    assert names(index.search(["same thing"])) == ["alpha", "mid", "zeta"]


def test_no_query_browses_entries_by_name() -> None:
    assert names(built().search([], namespaces=["fs"])) == [
        "listDirectory",
        "read_file",
        "write_file",
    ]
    assert names(built().search(["", "the"], limit=2)) == ["bing_search", "get_weather"]


def test_mcp_entries_are_searched_by_their_own_tool_name() -> None:
    index = LexicalIndex()
    wire = "mcp__gh__createIssue__0123456789abcdef"
    index.upsert(
        [
            ToolEntry(
                name=wire,
                namespace="mcp:gh",
                tool=Tool(description="Open a ticket."),
                source=ToolSource("gh", "create-issue"),
            )
        ]
    )
    assert names(index.search(["create issue"])) == [wire]
    assert names(index.search(["0123456789abcdef"])) == []


def test_a_namespace_whose_other_tools_match_lifts_its_tools() -> None:
    tools = [
        entry("alpha_search", "Search items.", "tickets"),
        entry("close_ticket", "Close a ticket.", "tickets"),
        entry("beta_search", "Search items.", "code"),
        entry("open_pull_request", "Open a pull request.", "code"),
    ]
    with_spaces = ToolIndex()
    without = ToolIndex(fusion=FusionParams(namespace_weight=0.0))
    for index in (with_spaces, without):
        index.upsert(tools)
    query = ["search pull requests"]
    assert names(with_spaces.search(query)) == ["open_pull_request", "beta_search", "alpha_search"]
    assert names(without.search(query)) == ["open_pull_request", "alpha_search", "beta_search"]
    # The namespace only reorders tools that match on their own words.
    assert names(with_spaces.search(["pull request"])) == ["open_pull_request"]
    with_spaces.remove(["open_pull_request"])
    assert names(with_spaces.search(["pull request"])) == []


def test_postings_stay_exact_through_many_incremental_changes() -> None:
    rng = random.Random(7)
    words = ["file", "web", "mail", "weather", "city", "search", "read", "write", "list", "send"]
    live: dict[str, ToolEntry] = {}
    index = ToolIndex()
    for step in range(300):
        name = f"tool_{rng.randrange(40)}"
        if rng.random() < 0.3:
            index.remove([name])
            live.pop(name, None)
        else:
            text = " ".join(rng.choices(words, k=rng.randrange(1, 6)))
            live[name] = entry(name, text, f"ns{rng.randrange(3)}")
            index.upsert([live[name]])
        assert len(index) == len(live), step
    fresh = ToolIndex()
    fresh.upsert(live.values())
    for word in words:
        assert sorted(names(index.search([word], limit=100))) == sorted(
            names(fresh.search([word], limit=100))
        )


# mcp-server-time's two tools as it describes them, beside a calculator.
CLOCK_AND_CALCULATOR = [
    entry(
        "get_current_time",
        "Get current time in a specific timezones",
        "time",
        {"timezone": "IANA timezone name (e.g., 'America/New_York', 'Europe/London')."},
    ),
    entry(
        "convert_time",
        "Convert time between timezones",
        "time",
        {"source_timezone": "Source IANA timezone name.", "time": "Time to convert (24-hour)."},
    ),
    entry(
        "multiply",
        "Multiply two numbers and return the product",
        "calc",
        {"a": "First factor.", "b": "Second factor."},
    ),
    entry("add", "Add two numbers", "calc", {"a": "First number.", "b": "Second number."}),
]


def test_times_as_in_multiplication_does_not_find_the_clock() -> None:
    lexical, fused = LexicalIndex(), default_index()
    for index in (lexical, fused):
        index.upsert(CLOCK_AND_CALCULATOR)

    # "times" is not stemmed to "time": no lexical hit at all, and the calculator comes
    # first in the fused ranking (before: the clock tools); "time" itself still finds them.
    assert names(lexical.search(["what is 7 times 6"], limit=4)) == []
    for need in ("calculate 12 times 7", "I need a calculator: 3 times 4"):
        assert names(fused.search([need], limit=1)) == ["multiply"]
    assert names(lexical.search(["current time in Tokyo"], limit=1)) == ["get_current_time"]

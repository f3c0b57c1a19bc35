import json
import threading
from typing import Any

from pegboard import ToolDefinition
from pegboard.core.entry import ToolEntry
from pegboard.core.tokens import (
    BpeTokenCounter,
    TokenCounter,
    count_entries,
    default_token_counter,
)
from pegboard.core.tool import Tool, canonical_json

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What to look for"}},
    "required": ["query"],
}


def test_counts_text_with_o200k() -> None:
    counter = default_token_counter()
    assert counter.count_text("") == 0
    assert counter.count_text("hello world") == 2
    # Special-token text is ordinary text to a definition counter, never an error.
    assert counter.count_text("<|endoftext|>") == 7


def test_lone_surrogates_are_counted_instead_of_raising() -> None:
    assert default_token_counter().count_text("a\udc80b") == 3


def test_default_counter_is_process_wide_and_satisfies_the_protocol() -> None:
    assert default_token_counter() is default_token_counter()
    assert isinstance(default_token_counter(), TokenCounter)


def test_tool_count_is_the_count_of_name_description_and_canonical_schema() -> None:
    counter = default_token_counter()
    text = f"web_search\nSearch the web.\n{canonical_json(SCHEMA)}"
    assert ToolDefinition("web_search", "Search the web.", SCHEMA).token_text == text
    assert counter.count_tool(
        ToolDefinition("web_search", "Search the web.", SCHEMA)
    ) == counter.count_text(text)


def test_key_order_of_the_schema_does_not_change_the_count() -> None:
    reordered = json.loads(json.dumps(SCHEMA))
    reordered = {k: reordered[k] for k in reversed(list(reordered))}
    counter = BpeTokenCounter()
    assert counter.count_tool(ToolDefinition("t", "d", SCHEMA)) == counter.count_tool(
        ToolDefinition("t", "d", reordered)
    )
    assert counter.cache_len == 1


def test_unserialisable_schema_counts_name_and_description_only() -> None:
    cyclic: dict[str, Any] = {"type": "object"}
    cyclic["self"] = cyclic
    counter = BpeTokenCounter()
    assert counter.count_tool(ToolDefinition("t", "describe me", cyclic)) == counter.count_text(
        "t\ndescribe me"
    )


def test_cache_is_bounded_and_keeps_the_most_recent_definitions() -> None:
    counter = BpeTokenCounter(cache_size=3)
    for i in range(5):
        counter.count_tool(ToolDefinition(f"t{i}", "d", SCHEMA))
    assert counter.cache_len == 3
    assert counter.count_tool(ToolDefinition("t4", "d", SCHEMA)) == counter.count_text(
        ToolDefinition("t4", "d", SCHEMA).token_text
    )
    counter.clear_cache()
    assert counter.cache_len == 0


def test_count_entries_sums_each_entrys_wire_name_description_and_schema() -> None:
    counter = BpeTokenCounter()
    tools = [Tool("Search the web.", SCHEMA), Tool("Fetch a page.", {"type": "object"})]
    entries = [ToolEntry("web_search", "web", tools[0]), ToolEntry("web_fetch", "web", tools[1])]
    expected = counter.count_tool(
        ToolDefinition("web_search", "Search the web.", SCHEMA)
    ) + counter.count_tool(ToolDefinition("web_fetch", "Fetch a page.", {"type": "object"}))
    assert count_entries(entries, counter) == expected
    assert count_entries(entries) == expected
    assert count_entries([]) == 0


def test_concurrent_counting_from_threads_agrees() -> None:
    counter = BpeTokenCounter()
    results: list[int] = []
    lock = threading.Lock()

    def work() -> None:
        total = sum(counter.count_tool(ToolDefinition(f"t{i}", "d", SCHEMA)) for i in range(200))
        with lock:
            results.append(total)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(results) == 4
    assert len(set(results)) == 1


def test_count_entry_remembers_each_tool_object_but_recounts_a_new_wire_name() -> None:
    counter = BpeTokenCounter()
    tool = Tool("Search the web.", SCHEMA)
    first = counter.count_entry(ToolEntry("web_search", "web", tool))
    assert first == counter.count_tool(ToolDefinition("web_search", "Search the web.", SCHEMA))
    renamed = counter.count_entry(ToolEntry("a_much_longer_wire_name_for_search", "web", tool))
    assert renamed == counter.count_tool(
        ToolDefinition("a_much_longer_wire_name_for_search", "Search the web.", SCHEMA)
    )
    assert renamed > first
    counter.clear_cache()
    assert counter.count_entry(ToolEntry("web_search", "web", tool)) == first

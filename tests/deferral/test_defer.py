from typing import Any

import pytest

from pegboard.core.definition import ToolDefinition
from pegboard.core.tokens import count_entries, default_token_counter
from pegboard.core.tool import ToolContext
from pegboard.deferral import (
    DEFAULT_CONTEXT_WINDOW,
    defer_threshold,
    meta_tools_overhead_tokens,
    render_deferred_section,
    should_defer,
)
from pegboard.deferral import defer as defer_module
from pegboard.deferral.defer import stays_inline
from pegboard.deferral.definitions import DEFINITIONS, EXEC_DEFINITIONS, INJECTED_META_TOOLS
from tests.deferral.factories import entry, heavy


class CharCounter:
    """A deliberately different counter: one token per character."""

    def count_text(self, text: str) -> int:
        return len(text)

    def count_tool(self, definition: ToolDefinition) -> int:
        return len(definition.token_text)


def test_only_never_entries_are_not_deferred() -> None:
    entries = [heavy(f"t{i}", defer="never") for i in range(6)]
    decision = should_defer(entries, 32_000)
    assert decision.names == frozenset()
    assert decision.threshold == 3200


def test_always_entries_are_deferred_whatever_their_cost() -> None:
    decision = should_defer([entry("tiny", defer="always"), entry("other", defer="never")], 200_000)
    assert decision.names == {"tiny"}
    assert decision.auto_cost is None


def test_a_tiny_auto_entry_stays_inline_and_the_threshold_is_20000() -> None:
    decision = should_defer([entry("tiny")], None)
    assert decision.names == frozenset()
    assert decision.threshold == 20_000


def test_a_single_huge_auto_entry_stays_inline_below_the_minimum_count() -> None:
    decision = should_defer([heavy("huge", fields=400)], 32_000)
    assert decision.names == frozenset()
    assert decision.auto_cost is None


def test_five_large_auto_entries_are_all_deferred() -> None:
    entries = [heavy(f"t{i}") for i in range(5)]
    decision = should_defer(entries, 32_000)
    assert decision.names == {"t0", "t1", "t2", "t3", "t4"}
    assert decision.auto_cost == count_entries(entries)
    assert decision.auto_cost > 3200
    assert decision.overhead == meta_tools_overhead_tokens(entries)


def test_cost_held_entirely_in_a_200_field_schema_still_counts() -> None:
    entries = [heavy(f"t{i}", fields=200, description="") for i in range(5)]
    decision = should_defer(entries, 100_000)
    assert decision.threshold == 10_000
    assert decision.names == {f"t{i}" for i in range(5)}


def test_a_small_context_does_not_defer_when_the_pool_costs_less_than_the_overhead() -> None:
    entries = [entry(f"t{i}") for i in range(5)]
    decision = should_defer(entries, 1000)
    assert decision.threshold == 100
    assert decision.auto_cost is not None
    assert decision.overhead is not None
    assert 100 < decision.auto_cost < decision.overhead
    assert decision.names == frozenset()


def test_mixed_policies_defer_always_and_the_auto_pool_but_keep_never() -> None:
    entries = [
        *(heavy(f"auto{i}") for i in range(5)),
        heavy("pinned", defer="never"),
        entry("hidden", defer="always"),
    ]
    decision = should_defer(entries, 32_000)
    assert decision.names == {"auto0", "auto1", "auto2", "auto3", "auto4", "hidden"}


@pytest.mark.parametrize("window", [None, 0, -5])
def test_an_unknown_context_window_means_200000(window: int | None) -> None:
    assert should_defer([entry("x")], window).threshold == 20_000
    assert defer_threshold(window) == DEFAULT_CONTEXT_WINDOW // 10


def test_explicitly_gated_tools_are_never_deferred_whatever_their_policy() -> None:
    async def gate(args: dict[str, Any], ctx: ToolContext) -> bool:
        return args.get("dangerous") is True

    entries = [
        *(heavy(f"auto{i}") for i in range(5)),
        heavy("gated_auto", needs_approval=True),
        entry("gated_always", defer="always", needs_approval=gate),
        heavy("ungated_false", needs_approval=False),
    ]
    decision = should_defer(entries, 32_000)
    assert decision.names == {"auto0", "auto1", "auto2", "auto3", "auto4", "ungated_false"}


DESTRUCTIVE = {"destructiveHint": True}


def test_tools_gated_only_by_the_destructive_hint_are_deferred_with_the_auto_pool() -> None:
    entries = [
        *(heavy(f"auto{i}") for i in range(4)),
        heavy("destroys", needs_approval=True, annotations=DESTRUCTIVE),
        heavy("destroys_but_read_only", annotations={**DESTRUCTIVE, "readOnlyHint": True}),
        heavy("explicit_gate", needs_approval=True, annotations={"readOnlyHint": False}),
        # force_prompt_tools are registered defer="never": inline, as in the reference.
        heavy("forced", defer="never", needs_approval=True, annotations=DESTRUCTIVE),
    ]
    decision = should_defer(entries, 32_000)
    assert decision.names == {
        "auto0",
        "auto1",
        "auto2",
        "auto3",
        "destroys",
        "destroys_but_read_only",
    }
    # The destructive tool counts towards the auto pool's minimum size and cost.
    assert decision.auto_cost == count_entries([e for e in entries if e.name in decision.names])
    assert [stays_inline(e) for e in entries] == [False] * 6 + [True, False]


def test_a_callable_gate_keeps_a_destructive_tool_inline() -> None:
    async def gate(args: dict[str, Any], ctx: ToolContext) -> bool:
        return True

    entries = [
        *(heavy(f"auto{i}") for i in range(5)),
        heavy("destroys", needs_approval=gate, annotations=DESTRUCTIVE),
    ]
    assert "destroys" not in should_defer(entries, 32_000).names


def test_the_overhead_is_measured_from_the_meta_tools_and_section_with_the_same_counter() -> None:
    entries = [heavy(f"t{i}") for i in range(5)]
    for counter in (default_token_counter(), CharCounter()):
        names = list(INJECTED_META_TOOLS)
        tools = sum(counter.count_tool(DEFINITIONS[name]) for name in names)
        section = render_deferred_section(names, entries, counter=counter)
        expected = tools + counter.count_text(section)
        assert meta_tools_overhead_tokens(entries, counter) == expected
        assert should_defer(entries, 32_000, counter).overhead == expected
    assert meta_tools_overhead_tokens() == defer_module.META_TOOLS_OVERHEAD_TOKENS
    assert 250 < defer_module.META_TOOLS_OVERHEAD_TOKENS < 500


def test_tool_exec_counts_its_definition_and_prompt_line_in_the_measured_overhead() -> None:
    entries = [heavy(f"t{i}") for i in range(5)]
    for counter in (default_token_counter(), CharCounter()):
        names = [*INJECTED_META_TOOLS, "tool_exec"]
        tools = sum(counter.count_tool(EXEC_DEFINITIONS[name]) for name in names)
        section = render_deferred_section(names, entries, counter=counter)
        expected = tools + counter.count_text(section)
        assert meta_tools_overhead_tokens(entries, counter, tool_exec=True) == expected
        assert should_defer(entries, 32_000, counter, tool_exec=True).overhead == expected
        assert expected > meta_tools_overhead_tokens(entries, counter)
    # tool_exec is opt-in; with it the meta-tools and section stay under ~750 tokens.
    assert 600 < meta_tools_overhead_tokens(tool_exec=True) < 750


def test_a_sticky_pool_stays_deferred_below_the_threshold_while_it_beats_the_overhead() -> None:
    entries = [heavy(f"t{i}", fields=30) for i in range(5)]
    plain = should_defer(entries, 100_000)
    assert plain.auto_cost is not None
    assert plain.overhead is None
    assert plain.names == frozenset()
    sticky = should_defer(entries, 100_000, sticky=True)
    assert sticky.overhead is not None
    assert sticky.auto_cost == plain.auto_cost
    assert sticky.auto_cost > sticky.overhead
    assert sticky.names == {"t0", "t1", "t2", "t3", "t4"}
    assert should_defer(entries[:4], 100_000, sticky=True).names == frozenset()


class FixedCounter:
    """Every tool costs ``per_tool`` tokens and every text ``per_text``."""

    def __init__(self, per_tool: int, per_text: int = 1) -> None:
        self.per_tool = per_tool
        self.per_text = per_text

    def count_text(self, text: str) -> int:
        return self.per_text

    def count_tool(self, definition: ToolDefinition) -> int:
        return self.per_tool


def test_a_pool_costing_exactly_the_threshold_stays_inline_and_one_token_more_defers() -> None:
    entries = [entry(f"t{i}") for i in range(5)]
    at = should_defer(entries, 32_000, FixedCounter(640))
    assert (at.auto_cost, at.threshold, at.names) == (3200, 3200, frozenset())
    over = should_defer([*entries, entry("t5")], 32_000, FixedCounter(641))
    assert (over.auto_cost, over.overhead) == (3846, 3 * 641 + 1)
    assert over.names == {"t0", "t1", "t2", "t3", "t4", "t5"}


def test_a_pool_over_the_threshold_but_not_over_the_overhead_stays_inline() -> None:
    entries = [entry(f"t{i}") for i in range(5)]
    decision = should_defer(entries, 1000, FixedCounter(60, per_text=500))
    assert (decision.auto_cost, decision.threshold, decision.overhead) == (300, 100, 680)
    assert decision.names == frozenset()

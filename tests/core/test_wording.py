from pegboard.core.wording import plural


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert [plural(n, "tool") for n in (0, 1, 2)] == ["0 tools", "1 tool", "2 tools"]
    assert plural(1, "cached tool") == "1 cached tool"
    assert plural(3, "query", "queries") == "3 queries"

"""The keyword baselines fed the query's content words, on the four-tool bench fixture."""

from __future__ import annotations

from pathlib import Path

from pegboard.bench.data import Catalog, build_catalog, load_tools
from pegboard.bench.term_baselines import (
    RegexTermsBaseline,
    SubstringTermsBaseline,
    content_words,
)

FIXTURE = Path(__file__).parent.parent / "fixtures" / "bench"


def catalog() -> Catalog:
    return build_catalog(load_tools(FIXTURE / "tools.jsonl"))


def ranked_ids(method: SubstringTermsBaseline | RegexTermsBaseline, query: str) -> list[str]:
    cat = catalog()
    method.build(cat.entries)
    return [cat.ids[name] for name in method.rank(query, 10)]


def test_content_words_are_lower_cased_distinct_and_free_of_stopwords() -> None:
    assert content_words("Search the web, then email the WEB results") == [
        "search",
        "web",
        "email",
        "results",
    ]
    assert content_words("Write.*disk") == ["write", "disk"]
    assert content_words("the and of") == []


def test_substring_terms_ranks_by_distinct_matched_words_then_name() -> None:
    method = SubstringTermsBaseline()
    assert ranked_ids(method, "read file") == ["fs/read_file", "fs/write_file"]
    assert ranked_ids(method, "search the web, then email the results") == [
        "web/search",
        "mail/send_email",
    ]
    assert ranked_ids(method, "file") == ["fs/read_file", "fs/write_file"]


def test_substring_terms_matches_inside_words_and_the_namespace_label() -> None:
    method = SubstringTermsBaseline()
    # "mai" is inside "email" and the label "mail"; "fs" only in the label of the file tools.
    assert ranked_ids(method, "mai") == ["mail/send_email"]
    assert ranked_ids(method, "fs") == ["fs/read_file", "fs/write_file"]


def test_regex_terms_counts_distinct_alternatives_over_name_and_description() -> None:
    method = RegexTermsBaseline()
    assert ranked_ids(method, "Write.*disk") == ["fs/write_file", "fs/read_file"]
    assert ranked_ids(method, "send an EMAIL") == ["mail/send_email"]
    # The namespace label is not searched by the regex design.
    assert ranked_ids(method, "fs") == []


def test_a_query_of_only_stopwords_finds_nothing() -> None:
    assert ranked_ids(SubstringTermsBaseline(), "what is the") == []
    assert ranked_ids(RegexTermsBaseline(), "what is the") == []

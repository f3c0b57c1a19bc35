"""scripts/train_query_adapter.py: the pairs it reads from Debian's documentation and the
contrastive training of the query-side adapter (bench/RESULTS.md, session 15, kbtune)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "train_query_adapter.py"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("train_query_adapter", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


RENDERED = """sleep(3)            Library Functions Manual            sleep(3)

NAME
       sleep - sleep for a specified number of seconds

SYNOPSIS
       #include <unistd.h>

DESCRIPTION
       sleep() causes the calling thread to sleep either until the number
       of real-time seconds specified in seconds have elapsed.

       A second paragraph.
"""


def test_a_rendered_man_page_splits_into_its_sections(script: ModuleType) -> None:
    sections = script._man_sections(RENDERED)

    assert sections == {
        "NAME": "sleep - sleep for a specified number of seconds",
        "SYNOPSIS": "#include <unistd.h>",
        "DESCRIPTION": "sleep() causes the calling thread to sleep either until the number\n"
        "of real-time seconds specified in seconds have elapsed.\n\nA second paragraph.",
    }
    assert script._cut(sections["DESCRIPTION"]) == (
        "sleep() causes the calling thread to sleep either until the number of real-time "
        "seconds specified in seconds have elapsed.\n\nA second paragraph."
    )


def test_pod_markup_and_word_overlap(script: ModuleType) -> None:
    assert script._pod_text("Use C<sort> and L<the docs|perlfunc/sort>, B<C<$a>>") == (
        "Use sort and perlfunc/sort, $a"
    )
    assert script._pod_text("C<< $a <=> $b >>") == "$a <=> $b"
    # "how", "sort", "hash" of the query's 4 distinct words of 3+ letters; "value" is missing
    assert script._overlap("How do I sort a hash by value?", "To sort a hash, how...") == 0.75
    assert script._prose("one two three four five six seven eight.") is True
    assert script._prose("Index: a b c") is False


def test_training_learns_a_map_from_queries_to_their_passages(script: ModuleType) -> None:
    rng = np.random.default_rng(3)
    dims, n = 24, 1200
    queries = rng.normal(size=(n, dims)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    mixing = np.eye(dims) + 1.5 * rng.normal(size=(dims, dims)) / np.sqrt(dims)
    passages = (queries @ mixing.T + 0.1 * rng.normal(size=(n, dims))).astype(np.float32)
    passages /= np.linalg.norm(passages, axis=1, keepdims=True)
    train, held = slice(0, 1000), slice(1000, n)

    untrained = script.train(
        queries[train], passages[train], epochs=0, batch=100, lr=1e-2, decay=0.0, temperature=0.05
    )
    w = script.train(
        queries[train], passages[train], epochs=30, batch=100, lr=1e-2, decay=0.0, temperature=0.05
    )

    assert np.array_equal(untrained, np.eye(dims, dtype=np.float32))
    before, _ = script.recall(queries[held], passages[held], untrained)
    after, _ = script.recall(queries[held], passages[held], w)
    assert before == pytest.approx(0.68)  # 136 of the 200 held-out queries find theirs
    assert after == 1.0


def test_batches_drawn_by_source_stay_within_one_source(script: ModuleType) -> None:
    groups = np.array(["man1"] * 7 + ["perlfaq4"] * 3)

    batches = script._batches(np.random.default_rng(0), len(groups), 3, groups)

    assert sorted(len(b) for b in batches) == [3, 3, 3]
    assert all(len(set(groups[b])) == 1 for b in batches)

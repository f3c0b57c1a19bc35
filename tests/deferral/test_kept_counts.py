"""Deferral's token counts are kept in the data directory: a later process with the same
texts counts them without loading the encoding."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from pegboard.core.definition import ToolDefinition
from pegboard.core.tokens import BpeTokenCounter
from pegboard.deferral import kept_counts
from pegboard.deferral.kept_counts import keep_counts, read_counts

TEXTS = ["hello world", "Send an email to bob", "<|endoftext|>", "查询天气", ""]
TOOL = ToolDefinition("send_email", "Send an email message.", {"type": "object"})


def _counted(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    monkeypatch.setattr(kept_counts, "SAVE_DELAY_S", 0.0)
    counter = BpeTokenCounter()
    keep_counts(counter, path)
    before = set(threading.enumerate())
    found = [counter.count_text(t) for t in TEXTS] + [counter.count_tool(TOOL)]
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=30)  # the save
    return found


def test_a_later_counter_reads_the_counts_and_never_loads_the_encoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "token-counts.bin"
    expected = _counted(path, monkeypatch)
    assert len(read_counts(BpeTokenCounter(), path)) == len(TEXTS) + 1

    later = BpeTokenCounter()
    keep_counts(later, path)
    assert [later.count_text(t) for t in TEXTS] + [later.count_tool(TOOL)] == expected
    assert later._tokenizer is None  # no count was made: the encoding was never loaded
    assert expected[:3] == [2, 5, 7]


@pytest.mark.parametrize("damage", [b"garbage", b"pegboard-token-counts o200k_base\nabc"])
def test_a_damaged_counts_file_is_ignored_and_rewritten(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    damage: bytes,
) -> None:
    path = tmp_path / "token-counts.bin"
    path.write_bytes(damage)

    with caplog.at_level(logging.WARNING, logger="pegboard"):
        found = _counted(path, monkeypatch)

    assert found[:3] == [2, 5, 7]
    assert "ignoring the unreadable token counts" in caplog.text
    assert len(read_counts(BpeTokenCounter(), path)) == len(TEXTS) + 1


def test_counts_of_another_encoding_are_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "token-counts.bin"
    _counted(path, monkeypatch)
    other = BpeTokenCounter("cl100k_base")

    assert read_counts(other, path) == []

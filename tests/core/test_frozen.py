"""quick_init: the frozen dataclasses a call makes, built with the same signature, values,
defaults and frozenness as the ``__init__`` dataclasses generates."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest

from pegboard.calls.audit import CallRecord
from pegboard.core.frozen import quick_init
from pegboard.core.output import TextPart, ToolOutput
from pegboard.core.tool import ToolContext


def _pair() -> tuple[type, type]:
    def make() -> type:
        @dataclass(frozen=True, slots=True)
        class Shape:
            a: int
            b: str = "b"
            c: list[int] = field(default_factory=list)
            d: Any = field(default=None, kw_only=True)

        return Shape

    return make(), quick_init(make())


def test_the_quick_init_takes_what_the_generated_one_takes_and_stores_the_same() -> None:
    plain, quick = _pair()

    assert str(inspect.signature(quick)) == str(inspect.signature(plain))
    for args, kwargs in [((1,), {}), ((1, "x"), {"d": 4}), ((), {"a": 2, "c": [3]})]:
        made, reference = quick(*args, **kwargs), plain(*args, **kwargs)
        assert dataclasses.asdict(made) == dataclasses.asdict(reference)
        assert repr(made).replace("Shape", "") == repr(reference).replace("Shape", "")
    assert quick(1).c is not quick(1).c  # a fresh default per instance
    for args, kwargs in [((), {}), ((1, "x", [], 4), {}), ((1,), {"e": 1})]:
        with pytest.raises(TypeError) as ours:
            quick(*args, **kwargs)
        with pytest.raises(TypeError) as theirs:
            plain(*args, **kwargs)
        assert str(ours.value) == str(theirs.value)


def test_a_quickly_built_record_is_still_frozen_equal_hashable_and_picklable() -> None:
    record = CallRecord(1.0, "gateway", "t", "c", None, "h", "not_required", "ok", 0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.tool = "other"  # type: ignore[misc]
    same = CallRecord(1.0, "gateway", "t", "c", None, "h", "not_required", "ok", 0.5)
    assert record == same
    assert hash(record) == hash(same)
    assert pickle.loads(pickle.dumps(record)) == record
    assert dataclasses.replace(record, client="x").client == "x"
    assert record.principal == "anonymous"
    assert ToolContext().extra == {}
    assert ToolContext().extra is not ToolContext().extra
    assert ToolOutput.text("a") == ToolOutput(parts=(TextPart("a"),))


def test_only_a_frozen_slotted_dataclass_without_post_init_is_taken() -> None:
    @dataclass(frozen=True)
    class Unslotted:
        a: int

    @dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            pass

    for kind in (Unslotted, Checked, dict):
        with pytest.raises(TypeError):
            quick_init(kind)

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from pegboard import Tool, ToolDefinition, ToolEntry
from pegboard.core.definition import canonical_json, wire_json, wire_loads

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def test_the_hash_is_stable_and_changes_with_every_model_facing_field() -> None:
    base = ToolDefinition("t", "d", SCHEMA)
    reordered = ToolDefinition(
        "t", "d", {"properties": {"q": {"type": "string"}}, "type": "object"}
    )
    variants = {
        ToolDefinition("u", "d", SCHEMA).hash,
        ToolDefinition("t", "e", SCHEMA).hash,
        ToolDefinition("t", "d", {"type": "object"}).hash,
        ToolDefinition("t", "d", SCHEMA, output_schema={"type": "string"}).hash,
        ToolDefinition("t", "d", SCHEMA, annotations={"destructiveHint": True}).hash,
        ToolDefinition("t", "d", SCHEMA, strict=True).hash,
        ToolDefinition("t", "d", SCHEMA, title="T").hash,
    }

    assert base.hash == reordered.hash
    assert base == reordered
    assert len({base, reordered}) == 1
    assert len(base.hash) == 64
    assert base.hash not in variants
    assert len(variants) == 7


def test_an_entry_gives_its_definition_under_its_wire_name() -> None:
    tool = Tool(description="Find things.", input_schema=SCHEMA, annotations={"readOnlyHint": True})
    entry = ToolEntry("find", "user", tool)

    assert entry.definition == ToolDefinition(
        "find", "Find things.", SCHEMA, annotations={"readOnlyHint": True}
    )
    assert entry.definition_hash == entry.definition.hash


def test_the_stub_and_the_token_text_come_from_the_definition() -> None:
    definition = ToolDefinition("find", "Find things.", SCHEMA)

    assert definition.stub() == (
        "/**\n"
        " * Find things.\n"
        " *\n"
        " * @param {Object} params - Parameters\n"
        " * @param {string} [params.q]\n"
        " */\n"
        "function find(params) {}"
    )
    assert definition.token_text == (
        'find\nFind things.\n{"properties":{"q":{"type":"string"}},"type":"object"}'
    )


# -- the JSON helpers: json's own text and errors, by the C encoder and scanner directly ------

_VALUES: list[Any] = [
    {"b": [1.5, None, True, "é\u2028\ud800"], "a": {"z": 1, "y": -0.0}},
    'quote " and \\ and \n',
    5,
    1e300,
    [],
    {},
    {1: 2, "1": 3},
    {"nan": float("nan")},
    {"inf": [float("inf")]},
    {"odd": object()},
    {"keys": {1: "a", "b": 2}},
]


def _outcome(encode: Callable[[Any], str], value: Any) -> tuple[str, str]:
    try:
        return "ok", encode(value)
    except Exception as exc:
        return type(exc).__name__, str(exc).replace(hex(id(value)), "")


@pytest.mark.parametrize("value", _VALUES, ids=range(len(_VALUES)))
def test_wire_and_canonical_json_write_what_json_dumps_writes(value: Any) -> None:
    def wire(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"), allow_nan=False)

    def canonical(v: Any) -> str:
        return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)

    assert _outcome(wire_json, value) == _outcome(wire, value)
    assert _outcome(canonical_json, value) == _outcome(canonical, value)


def test_a_circular_value_is_refused_as_json_refuses_it_and_the_next_value_is_written() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference detected"):
        wire_json(loop)
    with pytest.raises(ValueError, match="Out of range float values"):
        wire_json({"x": [float("nan")]})  # an error part-way: nothing is left marked
    assert wire_json([loop[1:], {"k": []}]) == '[[],{"k":[]}]'


def test_threads_encoding_one_value_at_once_each_write_it_whole() -> None:
    """Each thread keeps an encoder of its own: a value several threads encode at once is no
    circular reference to any of them (one shared encoder's markers would say it is)."""

    class Slow:
        """Written by canonical_json's default (str), which lets other threads run."""

        def __str__(self) -> str:
            time.sleep(0.001)
            return "slow"

    shared = {"k": [{"n": i, "v": Slow()} for i in range(5)], "s": "é" * 50}
    expected = json.dumps(
        shared, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    failures: list[BaseException] = []

    def encode_often() -> None:
        try:
            for _ in range(40):
                assert canonical_json(shared) == expected
        except BaseException as exc:  # reported below, not lost in the thread
            failures.append(exc)

    threads = [threading.Thread(target=encode_often) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []


_LINES = [
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call"}\n',
    b'{"a":1}\r\n \t',
    b'{"a":1} x',
    b'{"a":1}{"b":2}',
    b'\xef\xbb\xbf{"a":1}',  # a UTF-8 byte-order mark
    b'{"a":"\xed\xa0\x80"}',  # an encoded lone surrogate
    b'{"a":"\xff"}',
    b'{"a":"\\ud800"}',
    b'{"a":',
    b'{"a":1,}',
    b'{"a":NaN}',
    b" {}",
    b"[1]",
    b"{" * 100_000,
    '{"é":"ü"}'.encode("utf-16"),
]


@pytest.mark.parametrize("line", _LINES, ids=range(len(_LINES)))
def test_wire_loads_reads_what_json_loads_reads_and_refuses_what_it_refuses(line: bytes) -> None:
    def outcome(load: Callable[[bytes], Any]) -> str:
        try:
            return repr(load(line))
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"

    assert outcome(wire_loads) == outcome(json.loads)

"""Reading the tool calls a small model wrote as text (llm.text_calls)."""

from __future__ import annotations

import pytest

from pegboard.llm.text_calls import extract_text_calls

OFFERED = {"add", "tool_search"}
ADD = ("add", {"a": 1, "b": 2})


def found(text: str) -> tuple[list[tuple[str, dict[str, object]]], str]:
    result = extract_text_calls(text, OFFERED, id_prefix="text")
    assert [c.id for c in result.calls] == [f"text_{n}" for n in range(1, len(result.calls) + 1)]
    return [(c.name, c.arguments) for c in result.calls], result.text


@pytest.mark.parametrize(
    ("text", "calls", "left"),
    [
        pytest.param(
            '```json\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n```', [ADD], "", id="fenced"
        ),
        pytest.param('{"name": "add", "arguments": {"a": 1, "b": 2}}', [ADD], "", id="bare"),
        pytest.param(
            '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>',
            [ADD],
            "",
            id="tool_call tags",
        ),
        pytest.param(
            "<tool_call>{'name': 'add', 'arguments': {'a': 1, 'b': 2},}</tool_call>",
            [ADD],
            "",
            id="tags around sloppy JSON",
        ),
        pytest.param(
            '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>\n'
            '<tool_call>{"name": "tool_search", "arguments": {"query": "time"}}</tool_call>',
            [ADD, ("tool_search", {"query": "time"})],
            "",
            id="two tagged calls",
        ),
        pytest.param(
            '[{"name": "add", "parameters": {"a": 1, "b": 2}}, '
            '{"name": "add", "arguments": "{\\"a\\": 3, \\"b\\": 4}"}]',
            [ADD, ("add", {"a": 3, "b": 4})],
            "",
            id="a list, parameters, string arguments",
        ),
        pytest.param(
            'I will add them.\n\n```json\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n```\n'
            "Then I answer.",
            [ADD],
            "I will add them.\n\nThen I answer.",
            id="prose around a fenced call",
        ),
        pytest.param(
            'Adding {"name": "add", "arguments": {"a": 1, "b": 2}} now.',
            [ADD],
            "Adding now.",
            id="a call inside a sentence",
        ),
        pytest.param(
            '{"type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}',
            [ADD],
            "",
            id="OpenAI's own shape",
        ),
    ],
)
def test_each_written_form_is_read_as_calls_and_the_prose_kept(
    text: str, calls: list[tuple[str, dict[str, object]]], left: str
) -> None:
    assert found(text) == (calls, left)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('Example: {"name": "rm", "arguments": {"path": "/"}}', id="not offered"),
        pytest.param('{"name": "add", "arguments": {}, "note": "x"}', id="more than a call"),
        pytest.param('[{"name": "add", "arguments": {}}, {"rows": 3}]', id="a list of data"),
        pytest.param('{"name": "add", "description": "adds"}', id="a tool description"),
        pytest.param("Use {braces} freely { and [brackets.", id="no JSON at all"),
        pytest.param('{"name": 3, "arguments": {}}', id="a name that is no string"),
    ],
)
def test_text_that_is_not_a_call_of_an_offered_tool_is_left_alone(text: str) -> None:
    assert found(text) == ([], text)


def test_arguments_that_do_not_parse_are_kept_for_repair() -> None:
    result = extract_text_calls(
        '{"name": "add", "arguments": "{a: 1, b: 2"}', OFFERED, id_prefix="t"
    )
    (call,) = result.calls
    assert call.name == "add"
    assert call.raw_arguments == "{a: 1, b: 2"
    assert call.parse_error is not None

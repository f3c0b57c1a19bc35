import pytest

from pegboard.formats.calls import ToolCall, as_dict


def test_json_string_arguments_are_parsed_and_the_raw_text_kept() -> None:
    call = ToolCall.parse("c1", "web_search", '{"query": "rust", "limit": 3}')
    assert call == ToolCall(
        "c1", "web_search", {"query": "rust", "limit": 3}, '{"query": "rust", "limit": 3}'
    )
    assert call.is_valid


def test_object_arguments_are_copied() -> None:
    given = {"query": "rust"}
    call = ToolCall.parse("c1", "web_search", given)
    assert call.arguments == given
    assert call.arguments is not given
    assert call.raw_arguments is None
    assert call.is_valid


@pytest.mark.parametrize("empty", [None, "", "  "])
def test_missing_or_empty_arguments_mean_an_empty_object(empty: str | None) -> None:
    call = ToolCall.parse("c1", "kb_list", empty)
    assert call.arguments == {}
    assert call.is_valid


def test_malformed_json_keeps_the_raw_string_and_says_where_it_broke() -> None:
    call = ToolCall.parse("c1", "web_search", '{"query": "rust",')
    assert call.arguments == {}
    assert call.raw_arguments == '{"query": "rust",'
    assert not call.is_valid
    assert call.parse_error == (
        "arguments are not valid JSON (Expecting property name enclosed in double quotes "
        "at line 1 column 18)"
    )


def test_json_that_is_not_an_object_is_invalid_and_kept_for_repair() -> None:
    double_encoded = '"{\\"query\\": \\"rust\\"}"'
    call = ToolCall.parse("c1", "web_search", double_encoded)
    assert call.parse_error == "arguments must be a JSON object, got string"
    assert call.raw_arguments == double_encoded
    assert ToolCall.parse("c1", "t", "[1]").parse_error == (
        "arguments must be a JSON object, got array"
    )


def test_non_string_non_mapping_arguments_are_invalid() -> None:
    call = ToolCall.parse("c1", "t", [1, 2])
    assert call.parse_error == "arguments must be a JSON object, got list"
    assert call.raw_arguments == "[1, 2]"


def test_as_dict_accepts_mappings_and_pydantic_models_only() -> None:
    from openai.types.chat import ChatCompletionMessageFunctionToolCall

    sdk = ChatCompletionMessageFunctionToolCall(
        id="c1", type="function", function={"name": "f", "arguments": "{}"}
    )
    assert as_dict(sdk) == {
        "id": "c1",
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
    }
    with pytest.raises(TypeError, match="expected a mapping or a pydantic model, got int"):
        as_dict(3)

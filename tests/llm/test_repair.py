import json
import logging
import socket
from dataclasses import replace
from typing import Any

import pytest

from pegboard.agent import AgentSession, build_agent_params
from pegboard.calls.approval import ApprovalRequest, CallbackApprovalHandler, Decision
from pegboard.config import ModelConfig
from pegboard.core.entry import ToolEntry
from pegboard.core.registry import ToolRegistry
from pegboard.core.scope import ModelInfo, ToolApplyScope
from pegboard.core.tool import Tool
from pegboard.errors import InvalidToolArguments, ToolNotFound
from pegboard.formats import ToolCall
from pegboard.llm import Repairer, create_client, create_repair
from tests.llm.clients import ADD, KINDS, Kind, client_for
from tests.model_server import ScriptedModel, Turn

pytestmark = pytest.mark.anyio

INVALID = InvalidToolArguments("add", ["b: required property missing"])


def _repair(server: ScriptedModel, kind: Kind = "openai", **options: Any) -> Repairer:
    return create_repair(client_for(kind, server), **options)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param('"{\\"a\\": 1, \\"b\\": 2}"', id="double-encoded JSON string"),
        pytest.param({"arguments": {"a": 1, "b": 2}}, id="arguments envelope"),
        pytest.param({"arguments": '{"a": 1, "b": 2}'}, id="envelope holding a JSON string"),
        pytest.param('{"a": 1, "b": 2,}', id="trailing comma"),
        pytest.param("{'a': 1, 'b': 2}", id="single quotes"),
        pytest.param('{"a": 1, "b": 2', id="missing brace"),
    ],
)
async def test_a_free_fix_needs_no_model_call(raw: Any, model_server: ScriptedModel) -> None:
    repair = _repair(model_server)

    fixed = await repair.repair(ADD, raw, INVALID)

    assert fixed == {"a": 1, "b": 2}
    assert model_server.requests == []
    assert (repair.stats.attempts, repair.stats.free_fixes, repair.stats.successes) == (1, 1, 1)


async def test_an_arguments_field_of_the_schema_is_never_taken_for_an_envelope() -> None:
    schema = {
        "type": "object",
        "properties": {"arguments": {"type": "string"}, "a": {"type": "integer"}},
        "required": ["a"],
    }
    tool = ToolEntry("run", "x", Tool("Run.", input_schema=schema))
    repair = create_repair(None)

    fixed = await repair.repair(tool, {"arguments": {"a": 1}}, INVALID)

    assert fixed is None  # unwrapping would give {"a": 1}, but "arguments" is a real field


@pytest.mark.parametrize("kind", KINDS)
async def test_one_structured_call_to_the_model_fixes_a_type_mismatch(
    kind: Kind, model_server: ScriptedModel
) -> None:
    model_server.add(Turn(structured={"a": 1, "b": 2}))
    repair = _repair(model_server, kind)
    error = InvalidToolArguments("add", ['a: expected integer, got string "one"'])

    fixed = await repair.repair(ADD, {"a": "one", "b": 2}, error)

    assert fixed == {"a": 1, "b": 2}
    (request,) = model_server.requests
    assert request.structured
    prompt = request.messages[-1]["content"]
    assert prompt == (
        "Tool: add\n"
        "Description: Add two integers.\n"
        f"Input schema: {json.dumps(ADD.tool.input_schema)}\n"
        'Original arguments: {"a": "one", "b": 2}\n'
        'Validation error: Invalid params for "add": a: expected integer, got string "one"'
    )
    if kind == "openai":
        assert request.body["response_format"]["json_schema"]["schema"] == ADD.tool.input_schema
    else:
        assert request.body["tool_choice"] == {"type": "tool", "name": "add"}
    stats = repair.stats
    assert (stats.attempts, stats.model_calls, stats.model_fixes, stats.successes) == (1, 1, 1, 1)


async def test_a_model_answer_that_is_still_invalid_gives_none(
    model_server: ScriptedModel,
) -> None:
    model_server.add(Turn(structured={"a": "one", "b": 2}))
    repair = _repair(model_server)

    fixed = await repair.repair(ADD, {"a": "one", "b": 2}, INVALID)

    assert fixed is None
    assert len(model_server.requests) == 1
    assert (repair.stats.model_calls, repair.stats.model_fixes, repair.stats.successes) == (1, 0, 0)


async def test_an_unknown_tool_is_never_repaired(model_server: ScriptedModel) -> None:
    repair = _repair(model_server)

    fixed = await repair.repair(ADD, {"a": 1}, ToolNotFound("ad", ["add"]))

    assert fixed is None
    assert model_server.requests == []
    assert repair.stats.attempts == 0


async def test_a_tool_whose_schema_is_broken_is_not_repaired(model_server: ScriptedModel) -> None:
    broken = ToolEntry("odd", "x", Tool("Odd.", input_schema={"type": "object", "required": 3}))
    repair = _repair(model_server)

    fixed = await repair.repair(broken, {"a": 1}, INVALID)

    assert fixed is None
    assert model_server.requests == []


async def test_the_per_turn_cap_stops_model_calls_until_the_next_turn(
    model_server: ScriptedModel,
) -> None:
    model_server.add(Turn(structured={"a": 1, "b": 1}), Turn(structured={"a": 3, "b": 3}))
    repair = _repair(model_server, max_model_repairs_per_turn=1)

    first = await repair.repair(ADD, {"a": "1"}, INVALID)
    capped = await repair.repair(ADD, {"a": "2"}, INVALID)
    free = await repair.repair(ADD, '{"a": 2, "b": 2,}', INVALID)  # free fixes are not capped
    repair.new_turn()
    next_turn = await repair.repair(ADD, {"a": "3"}, INVALID)

    assert (first, capped, free, next_turn) == (
        {"a": 1, "b": 1},
        None,
        {"a": 2, "b": 2},
        {"a": 3, "b": 3},
    )
    assert len(model_server.requests) == 2
    assert (repair.stats.attempts, repair.stats.capped, repair.stats.successes) == (4, 1, 3)


async def test_a_failing_model_call_gives_none_and_one_warning_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    client = create_client(ModelConfig(kind="openai", model="m", base_url=url, max_retries=0))
    repair = create_repair(client)

    fixed = await repair.repair(ADD, {"a": "one", "b": 2}, INVALID)

    assert fixed is None
    (record,) = [r for r in caplog.records if r.name == "pegboard.llm.repair"]
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith(
        f"repair of add: the model call failed: Model endpoint {url} is unreachable ("
    )
    assert record.exc_info is None


# --- through the dispatcher -------------------------------------------------------------

ran: list[dict[str, Any]] = []


def _add(args: dict[str, Any], _ctx: Any) -> int:
    ran.append(args)
    return int(args["a"]) + int(args["b"])


PLAIN_ADD = replace(ADD, tool=replace(ADD.tool, execute=_add))
GATED_ADD = replace(ADD, tool=replace(ADD.tool, execute=_add, needs_approval=True))
GPT = ModelInfo("m1", "openai", 32_000)


async def test_a_repaired_call_is_approved_with_the_repaired_arguments(
    model_server: ScriptedModel,
) -> None:
    model_server.add(Turn(structured={"a": 1, "b": 2}))
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return "allow_once"

    session = AgentSession(approval_handler=CallbackApprovalHandler(approve))
    repair = _repair(model_server)
    params = build_agent_params(
        ToolRegistry([GATED_ADD]), ToolApplyScope(), GPT, session=session, repair=repair
    )
    ran.clear()

    # Unparsable, and still wrong once parsed tolerantly ("two"): the model fixes it.
    (output,) = await params.dispatcher.run([ToolCall.parse("c1", "add", "{'a': 1, 'b': 'two'")])

    assert output.as_text() == "3"
    assert [dict(r.arguments) for r in asked] == [{"a": 1, "b": 2}]
    assert ran == [{"a": 1, "b": 2}]
    original = model_server.requests[0].messages[-1]["content"]
    assert "Original arguments: {'a': 1, 'b': 'two'\n" in original


async def test_an_unknown_name_gets_suggestions_and_no_model_call(
    model_server: ScriptedModel,
) -> None:
    repair = _repair(model_server)
    params = build_agent_params(ToolRegistry([GATED_ADD]), ToolApplyScope(), GPT, repair=repair)

    (output,) = await params.dispatcher.run([ToolCall.parse("c1", "ad", '{"a": 1, "b": 2}')])

    assert output.is_error
    assert output.as_text() == "Tool not found: ad. Did you mean: add?"
    assert model_server.requests == []
    assert repair.stats.attempts == 0


async def test_a_failed_repair_leaves_the_original_error_for_the_model(
    model_server: ScriptedModel,
) -> None:
    model_server.add(Turn(status=400, error="bad request"))
    params = build_agent_params(
        ToolRegistry([PLAIN_ADD]), ToolApplyScope(), GPT, repair=_repair(model_server)
    )

    (output,) = await params.dispatcher.run([ToolCall.parse("c1", "add", '{"a": "x", "b": 2}')])

    assert len(model_server.requests) == 1
    assert output.is_error
    assert output.as_text().startswith(
        'Invalid params for "add": a: expected integer, got string "x"\nExpected signature:'
    )


KEYWORD_SCHEMAS = {
    "uniqueItems": (
        {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        ["a", "a"],
        ["a", "b"],
    ),
    "contains": (
        {"type": "array", "items": {"type": "integer"}, "contains": {"const": 0}},
        [1, 2],
        [1, 0],
    ),
    "unevaluatedProperties": (
        {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "allOf": [{"properties": {"size": {"type": "integer"}}}],
            "unevaluatedProperties": False,
        },
        {"name": "n", "colour": "red"},
        {"name": "n", "size": 2},
    ),
}


@pytest.mark.parametrize("keyword", sorted(KEYWORD_SCHEMAS))
async def test_repair_rejects_answers_that_break_the_schemas_applicator_keywords(
    keyword: str, model_server: ScriptedModel
) -> None:
    schema, breaking, valid = KEYWORD_SCHEMAS[keyword]
    tool = ToolEntry(
        "put",
        "x",
        Tool(
            "Put a value.",
            input_schema={"type": "object", "properties": {"v": schema}, "required": ["v"]},
        ),
    )
    error = InvalidToolArguments("put", [f"v: fails {keyword}"])
    model_server.add(Turn(structured={"v": breaking}), Turn(structured={"v": valid}))
    repair = _repair(model_server)

    # The broken value as sent (a free reading of it) and the model's answer both break it.
    assert await repair.repair(tool, json.dumps({"v": breaking}), error) is None
    assert (repair.stats.free_fixes, repair.stats.model_calls) == (0, 1)
    # An answer that keeps the keyword is taken: the rejection is the keyword's, not the shape's.
    assert await repair.repair(tool, {"v": breaking}, error) == {"v": valid}
    assert (repair.stats.model_calls, repair.stats.model_fixes) == (2, 1)

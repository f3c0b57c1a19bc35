"""One scenario, four routes: the plain build_agent_params loop and each framework integration
must run the same tools, leave the same audit records and reach the same answer."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import pytest

from pegboard.calls.approval import arguments_fingerprint
from tests.integrations import drivers
from tests.integrations.scenario import EMAIL, EXPECTED_RAN, FINAL, INVOKE, QUERY, World, turns
from tests.model_server import ScriptedModel

pytestmark = pytest.mark.anyio

Driver = Callable[[World, ScriptedModel], Awaitable[drivers.Outcome]]
ROUTES: dict[str, Driver] = {
    "plain": drivers.run_plain_loop,
    "pydantic_ai": drivers.run_pydantic_ai,
    "openai_agents": drivers.run_openai_agents,
    "langchain": drivers.run_langchain,
    "langgraph": drivers.run_langgraph,
}

EXPECTED_TRAIL = [
    ("tool_search", arguments_fingerprint(QUERY), "not_required", "ok"),
    ("weather_lookup", arguments_fingerprint(INVOKE["params"]), "not_required", "ok"),
    ("tool_invoke", arguments_fingerprint(INVOKE), "not_required", "ok"),
    ("send_email", arguments_fingerprint(EMAIL), "allow_once", "ok"),
]


def tool_results(server: ScriptedModel) -> list[str]:
    """What the model read back for its calls, from the last request's history."""
    history = server.requests[-1].messages
    chat = [m["content"] for m in history if m.get("role") == "tool"]
    responses = [m["output"] for m in history if m.get("type") == "function_call_output"]
    return chat or responses


async def run(route: str) -> tuple[World, drivers.Outcome, ScriptedModel]:
    world = World()
    with ScriptedModel(turns()) as server:
        outcome = await ROUTES[route](world, server)
        assert server.problems == []
        assert server.remaining == 0
    return world, outcome, server


@pytest.mark.parametrize("route", list(ROUTES))
async def test_every_route_runs_the_same_tools_with_the_same_audit_and_answer(route: str) -> None:
    world, outcome, server = await run(route)

    assert world.ran == EXPECTED_RAN
    assert outcome.asked == ["send_email"]
    assert outcome.ran_before_approval == ["weather_lookup"]
    assert world.audit_trail() == EXPECTED_TRAIL
    assert {r.via for r in world.records if r.tool == "weather_lookup"} == {"tool_invoke"}
    assert outcome.answer == FINAL
    first = server.requests[0]
    assert sorted(first.tool_names) == ["send_email", "tool_inspect", "tool_invoke", "tool_search"]
    assert "weather_lookup" in json.dumps(first.body)  # the deferred-tools section
    assert "weather_lookup" in tool_results(server)[0]  # found by tool_search


async def test_the_routes_agree_with_each_other() -> None:
    seen = {route: await run(route) for route in ROUTES}
    plain_world, plain_outcome, plain_server = seen.pop("plain")
    assert len(tool_results(plain_server)) == 3
    assert "Oslo: sunny, 21 C" in tool_results(plain_server)[1]

    for route, (world, outcome, server) in seen.items():
        assert (route, tool_results(server)) == (route, tool_results(plain_server))
        assert (route, world.ran) == (route, plain_world.ran)
        assert (route, world.audit_trail()) == (route, plain_world.audit_trail())
        assert (route, outcome.answer) == (route, plain_outcome.answer)

from __future__ import annotations

import pytest

from tests.integrations.drivers import run_openai_agents
from tests.integrations.scenario import EXPECTED_RAN, FINAL, SCOPE, World, turns
from tests.model_server import ScriptedModel

pytest.importorskip("agents")
pytestmark = pytest.mark.anyio


async def test_a_runner_searches_invokes_a_deferred_tool_and_is_interrupted_for_the_gated_one(
    model_server: ScriptedModel,
) -> None:
    model_server.add(*turns())
    world = World()

    outcome = await run_openai_agents(world, model_server)

    assert outcome.asked == ["send_email"]
    assert outcome.ran_before_approval == ["weather_lookup"]
    assert world.ran == EXPECTED_RAN
    assert outcome.answer == FINAL
    first = model_server.requests[0]
    assert first.api == "responses"
    assert sorted(first.tool_names) == ["send_email", "tool_inspect", "tool_invoke", "tool_search"]
    assert "weather_lookup" in first.body["instructions"]
    assert model_server.problems == []

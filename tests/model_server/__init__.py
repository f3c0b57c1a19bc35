"""A scripted model server for tests: real HTTP on 127.0.0.1, real wire formats.

It speaks OpenAI Chat Completions (``.../chat/completions``, plain and streamed as SSE chunks,
tool calls streamed in pieces, ``response_format`` structured output), the OpenAI Responses API
(``.../responses``, plain and streamed as typed events; the OpenAI Agents SDK's default) and
Anthropic Messages (``.../messages``, plain and streamed with ``input_json_delta``), answering
each request with the next scripted :class:`Turn` and recording every request it got::

    with ScriptedModel([
        Turn(tool_calls=[Call("tool_search", {"query": "weather"})]),
        Turn(text="It is sunny."),
    ]) as model:
        client = openai.AsyncOpenAI(base_url=model.url, api_key="k")
        anthropic.AsyncAnthropic(base_url=model.url, api_key="k")  # same URL works
        ...
        assert model.requests[1].messages[-1]["role"] == "tool"
        assert model.problems == []

Or use the ``model_server`` fixture (tests/conftest.py) and ``model_server.add(Turn(...))``.
A request with no turn left, or one a turn's ``match`` rejects, is answered HTTP 400 (which no
SDK retries) and listed in :attr:`ScriptedModel.problems`.
"""

from tests.model_server.script import Call, Request, Turn
from tests.model_server.server import ScriptedModel

__all__ = ["Call", "Request", "ScriptedModel", "Turn"]

import logging
import socket
import sys
from typing import Literal

import pytest

from pegboard.config import ModelConfig
from pegboard.errors import ConfigError, ModelError, ModelUnavailable, OptionalDependencyMissing
from pegboard.llm import Message, create_client
from tests.llm.clients import KINDS, Kind, client_for
from tests.model_server import ScriptedModel, Turn

pytestmark = pytest.mark.anyio

SECRET = "sk-test-Zq8RlP0secretvalue"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("status", [429, 503])
async def test_a_429_or_5xx_is_retried_after_the_servers_retry_after(
    kind: Kind, status: int, model_server: ScriptedModel, caplog: pytest.LogCaptureFixture
) -> None:
    model_server.add(Turn(status=status, headers={"Retry-After": "0.013"}), Turn(text="ok"))
    client = client_for(kind, model_server)
    caplog.set_level(logging.INFO, logger=kind)

    answer = await client.chat([Message.user("hi")])

    assert answer.text == "ok"
    assert len(model_server.requests) == 2
    retries = [r.getMessage() for r in caplog.records if "Retrying request" in r.getMessage()]
    assert len(retries) == 1
    assert " in 0.013000 seconds" in retries[0]


@pytest.mark.parametrize("kind", KINDS)
async def test_retries_stop_at_max_retries_with_one_clear_error(
    kind: Kind, model_server: ScriptedModel
) -> None:
    busy = Turn(status=503, headers={"Retry-After": "0.001"}, error="overloaded")
    model_server.add(busy, busy)
    client = client_for(kind, model_server, max_retries=1)

    with pytest.raises(ModelError) as caught:
        await client.chat([Message.user("hi")])

    assert len(model_server.requests) == 2
    assert str(caught.value) == f"Model endpoint {model_server.url} answered HTTP 503: overloaded."


@pytest.mark.parametrize("kind", KINDS)
async def test_an_unreachable_endpoint_is_one_line_naming_it(kind: Kind) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    client = create_client(
        ModelConfig(kind=kind, model="m", base_url=url, max_retries=0), name="local", environ={}
    )

    with pytest.raises(ModelUnavailable) as caught:
        await client.chat([Message.user("hi")])

    message = str(caught.value)
    assert message.startswith(f"Model endpoint {url} is unreachable (")
    assert message.endswith("); check base_url and that the server is running.")
    assert "\n" not in message
    assert caught.value.__cause__ is None  # no SDK traceback chained to it
    assert caught.value.endpoint == url


@pytest.mark.parametrize("kind", KINDS)
async def test_the_key_comes_from_the_named_variable_and_never_shows(
    kind: Kind, model_server: ScriptedModel, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    environ = {"MY_KEY": SECRET}
    client = client_for(kind, model_server, api_key_env="MY_KEY", environ=environ)
    # An endpoint that echoes the key back in its error must not get it into our message.
    model_server.add(Turn(text="fine"), Turn(status=401, error=f"Incorrect API key {SECRET}"))

    await client.chat([Message.user("hi")])
    with pytest.raises(ModelError) as caught:
        await client.chat([Message.user("again")])

    assert model_server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert str(caught.value) == (
        f"Model endpoint {model_server.url} answered HTTP 401: Incorrect API key ***. "
        "Check the API key (api_key_env)."
    )
    assert SECRET not in repr(client)
    assert repr(client).endswith(f"model='m1' endpoint='{model_server.url}'>")
    assert all(SECRET not in r.getMessage() for r in caplog.records)


async def test_the_key_stays_out_of_an_unreachable_error() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    config = ModelConfig(kind="openai", model="m", base_url=url, api_key_env="K", max_retries=0)
    client = create_client(config, environ={"K": SECRET})

    with pytest.raises(ModelUnavailable) as caught:
        await client.chat([Message.user("hi")])

    assert SECRET not in str(caught.value)


def test_a_missing_key_variable_names_the_variable_not_a_value() -> None:
    config = ModelConfig(kind="anthropic", model="claude", api_key_env="ANTHROPIC_KEY_X")

    with pytest.raises(ConfigError) as caught:
        create_client(config, name="claude", environ={})

    assert str(caught.value) == (
        "models.claude.api_key_env names ANTHROPIC_KEY_X, which is not set; export "
        "ANTHROPIC_KEY_X=<key> or remove api_key_env for a local server"
    )


def test_without_the_llm_extra_building_a_client_names_the_pip_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # what an uninstalled package looks like

    with pytest.raises(OptionalDependencyMissing) as caught:
        create_client(ModelConfig(kind="openai", model="m"), environ={})

    assert "pip install 'pegboard[llm]'" in str(caught.value)


def test_importing_pegboard_llm_loads_no_provider_sdk() -> None:
    import subprocess

    code = (
        "import sys, pegboard, pegboard.llm, pegboard.cli.app;"
        "print(sorted(m for m in ('openai', 'anthropic', 'json_repair') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("kind", KINDS)
async def test_an_endpoint_that_never_answers_times_out_with_one_clear_line(
    kind: Kind, model_server: ScriptedModel
) -> None:
    model_server.add(Turn(hang=True))
    client = client_for(kind, model_server, timeout=0.2, max_retries=0)

    with pytest.raises(ModelUnavailable) as caught:
        await client.chat([Message.user("hi")])

    assert str(caught.value) == (
        f"Model endpoint {model_server.url} did not answer in time; raise the model's timeout "
        "or check the server."
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("cut", "said"),
    [
        ("clean", "ended the stream before the answer was complete; retry the request."),
        (
            "broken",
            "dropped the answer mid-stream (RemoteProtocolError: peer closed connection without "
            "sending complete message body (received ",
        ),
    ],
)
async def test_a_stream_cut_short_is_one_clear_error_not_a_partial_answer(
    kind: Kind, cut: Literal["clean", "broken"], said: str, model_server: ScriptedModel
) -> None:
    model_server.add(Turn(text="This answer never finishes, it is cut in half.", cut=cut))
    client = client_for(kind, model_server)

    with pytest.raises(ModelUnavailable) as caught:
        async for _event in client.stream([Message.user("hi")]):
            pass

    message = str(caught.value)
    assert message.startswith(f"Model endpoint {model_server.url} {said}")
    assert message.endswith("; retry the request.")
    assert "\n" not in message

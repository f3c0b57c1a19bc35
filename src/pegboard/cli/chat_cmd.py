"""``pegboard chat``: try pegboard with a model; the loop is :mod:`pegboard.chat.loop`.

Interactive by default (``/help``, ``/tools``, ``/status``, ``/exit``; Ctrl-C cancels the
running turn, not the session); ``--once "prompt"`` runs one turn for scripts and prints the
final answer (``--json``: the transcript) on stdout, exit 0. An unreachable model endpoint
exits 1 with one line naming it; no model configured exits 2 with the table to add.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pegboard.cli._common import EXIT_FAILED, EXIT_USAGE, echo_json, fail, load, run, state
from pegboard.cli.approval_prompt import cli_approval
from pegboard.cli.chat_view import ChatView, HeldLogLines, transcript_json
from pegboard.cli.tools_cmd import ProfileOpt
from pegboard.config import LoadedConfig
from pegboard.errors import ConfigError, PegboardError
from pegboard.service import Service

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal
    from rich.console import Console

    from pegboard.chat.loop import AgentLoop, TurnResult
    from pegboard.llm.types import ModelClient
    from pegboard.runtime import ToolRuntime

WARM_WAIT = 20.0  # seconds the first turn waits for MCP servers whose tools are not cached yet
EXAMPLE_TABLE = (
    '[models.local] kind = "openai", base_url = "http://127.0.0.1:11434/v1", model = "qwen3:8b"'
)
HELP = "/help  this list · /tools  the tools the model sees · /status  model, servers, counters"
COMMANDS = (
    ("/help", "this list"),
    ("/tools", "the tools the model sees now (inline and behind tool_search)"),
    ("/status", "the model, each server's state, call and repair counters"),
    ("/exit", "leave (also /quit, Ctrl-D)"),
    ("Ctrl-C", "cancel the running turn (the session goes on)"),
)


def chat(
    ctx: typer.Context,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Model id ([models.<id>] in the config).")
    ] = None,
    profile: ProfileOpt = None,
    once: Annotated[
        str | None,
        typer.Option(
            "--once", metavar="PROMPT", help="Run one turn with this prompt; print the answer."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="With --once: print the transcript as JSON.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Approve gated tools without asking.")
    ] = False,
) -> None:
    """Chat with a configured model over the profile's tools.

    The model gets the profile's MCP tools (large pools behind tool_search), gated tools ask
    first, broken tool calls are repaired once. Commands: /help, /tools, /status, /exit; Ctrl-C
    cancels the running turn.
    """
    if as_json and once is None:
        fail("--json needs --once: the transcript of one turn is printed for scripts", EXIT_USAGE)
    loaded = load(ctx)
    factory = state(ctx).runtime_factory
    model_id, client = _client(loaded, model)
    from pegboard.runtime import RuntimeOptions  # lazy: the MCP SDK

    try:
        runtime = Service(loaded, RuntimeOptions(profile=profile), factory=factory).runtime
    except PegboardError as exc:
        fail(str(exc), EXIT_USAGE)
    from pegboard.chat.loop import AgentLoop  # lazy: the loop pulls in the search layer

    text_calls = loaded.config.model(model_id)[1].text_tool_calls
    agent = AgentLoop.from_runtime(
        runtime, client, approval_handler=cli_approval(yes), text_tool_calls=text_calls
    )
    if once is not None:
        _once(agent, runtime, model_id, once, as_json=as_json)
    else:
        _interactive(agent, runtime, model_id)


def _client(loaded: LoadedConfig, name: str | None) -> tuple[str, ModelClient]:
    config = loaded.config
    if not config.models:
        fail(
            f"no model is configured; add a table to {loaded.path} such as {EXAMPLE_TABLE} "
            "(one key per line), then run pegboard chat again",
            EXIT_USAGE,
        )
    from pegboard.llm import create_client  # lazy: the provider SDKs

    try:
        model_id, model_config = config.model(name)
        return model_id, create_client(model_config, name=model_id)
    except PegboardError as exc:
        fail(str(exc), EXIT_USAGE)


async def _warm(runtime: ToolRuntime) -> None:
    """Wait (bounded) for allowed servers with no cached tools, so the first turn has them."""
    await Service.of(runtime).servers.warm_allowed(WARM_WAIT)


def _once(
    agent: AgentLoop, runtime: ToolRuntime, model_id: str, prompt: str, *, as_json: bool
) -> None:
    from rich.console import Console

    view = ChatView(Console(stderr=True))  # stdout carries only the answer (or the JSON)

    async def body() -> TurnResult | PegboardError:
        async with runtime.running():
            await _warm(runtime)
            try:
                return await agent.run_turn(prompt, view)
            except PegboardError as exc:  # raised here, it would leave as an exception group
                return exc
            finally:
                await agent.client.aclose()

    try:
        result = run(body)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    if isinstance(result, PegboardError):
        fail(str(result), EXIT_USAGE if isinstance(result, ConfigError) else EXIT_FAILED)
    if as_json:
        echo_json(transcript_json(agent, result, model_id))
    else:
        typer.echo(result.answer)
    if result.capped:
        fail(f"stopped after {result.rounds} model rounds without a final answer", EXIT_FAILED)


def _interactive(agent: AgentLoop, runtime: ToolRuntime, model_id: str) -> None:
    """The read-eval loop. The event loop runs in a portal thread for the whole session (MCP
    servers stay up between turns); the main thread reads input and gets Ctrl-C, which
    cancels the running turn's task."""
    from anyio.from_thread import start_blocking_portal
    from rich.console import Console
    from rich.text import Text

    console = Console()
    view = ChatView(console, sys.stdout)
    held = HeldLogLines()
    with held.installed(), start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(runtime.running()):
            portal.call(_warm, runtime)
            view.notes(held.take())
            console.print(Text(f"pegboard chat with {model_id} · {HELP} · /exit  leave"))
            while _one_line(console, portal, agent, runtime, view, model_id, held):
                pass
        portal.call(agent.client.aclose)


def _one_line(
    console: Console,
    portal: BlockingPortal,
    agent: AgentLoop,
    runtime: ToolRuntime,
    view: ChatView,
    model_id: str,
    held: HeldLogLines,
) -> bool:
    """Read and handle one line; False when the session ends."""
    import concurrent.futures

    from rich.text import Text

    view.notes(held.take())  # what was logged since the last prompt, above the new one
    try:
        line = console.input("you> ").strip()
    except EOFError:
        return False
    except KeyboardInterrupt:
        console.print(Text("\n(type /exit to leave)"))
        return True
    if line in ("/exit", "/quit"):
        return False
    if line in ("/help", "/?"):
        for command, meaning in COMMANDS:
            console.print(Text(f"{command:<8} {meaning}"))
    elif line == "/tools":
        portal.call(_sync, view.tools, agent)
    elif line == "/status":
        portal.call(_sync, view.status, agent, runtime, model_id)
    elif line.startswith("/"):
        console.print(Text(f"unknown command {line}; {HELP}"))
    elif line:
        future = portal.start_task_soon(agent.run_turn, line, view)
        try:
            future.result()
        except KeyboardInterrupt:
            future.cancel()
            view.end_text()
            console.print(Text("(turn cancelled)"))
        except concurrent.futures.CancelledError:
            console.print(Text("(turn cancelled)"))
        except PegboardError as exc:  # the endpoint is down, say: the session goes on
            view.end_text()
            console.print(Text(f"error: {exc}", style="red"))
        else:
            view.end_text()
    return True


async def _sync(fn: Callable[..., None], *args: Any) -> None:
    """Run a view command on the event loop's thread (it reads the registry the loop owns)."""
    fn(*args)

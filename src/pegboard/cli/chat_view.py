"""What ``pegboard chat`` shows: streamed text, one compact panel per tool call, the commands'
output, and the transcript as JSON. Everything a model or a tool wrote is shown as plain text
(rich markup in it never renders)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, TextIO

from pegboard.core.output import ToolOutput
from pegboard.core.wording import plural
from pegboard.formats.calls import ToolCall
from pegboard.llm.types import Message

if TYPE_CHECKING:
    from rich.console import Console

    from pegboard.chat.loop import AgentLoop, TurnResult
    from pegboard.runtime import ToolRuntime

PANEL_CHARS = 600  # a panel shows the start of long arguments and results


def _clip(text: str, limit: int = PANEL_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more chars)"


def _arguments(call: ToolCall) -> str:
    if call.parse_error is not None:
        return call.raw_arguments or ""
    return json.dumps(dict(call.arguments), ensure_ascii=False, default=str)


class HeldLogLines(logging.Handler):
    """Log records (warnings and worse) kept for the chat to show between prompts.

    Background tasks (a server failing its refresh while the user types) would otherwise
    write into the middle of the ``you>`` line, and Python's last-resort handler writes there.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._lines: list[str] = []
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock:
            self._lines.append(record.getMessage())

    def take(self) -> list[str]:
        with self._lock:
            lines, self._lines = self._lines, []
        return lines

    @contextmanager
    def installed(self) -> Iterator[HeldLogLines]:
        """Hold every record of the root logger's tree while inside."""
        root = logging.getLogger()
        root.addHandler(self)
        try:
            yield self
        finally:
            root.removeHandler(self)


class ChatView:
    """A :class:`~pegboard.chat.loop.LoopObserver` printing to ``console``; streamed text
    goes to ``text_stream`` (None: not shown, as with ``--once``)."""

    def __init__(self, console: Console, text_stream: TextIO | None = None) -> None:
        self.console = console
        self.text_stream = text_stream
        self._mid_line = False

    def on_text(self, delta: str) -> None:
        if self.text_stream is None:
            return
        self.text_stream.write(delta)
        self.text_stream.flush()
        self._mid_line = not delta.endswith("\n")

    def notes(self, lines: list[str]) -> None:
        """Show held log lines, each on a line of its own."""
        from rich.text import Text

        for line in lines:
            self.console.print(Text(f"pegboard: {line}", style="dim"))

    def end_text(self) -> None:
        """End the streamed line, if one is open."""
        if self._mid_line and self.text_stream is not None:
            self.text_stream.write("\n")
            self.text_stream.flush()
        self._mid_line = False

    def on_tool_result(
        self, call: ToolCall, output: ToolOutput, *, repaired: bool = False, from_text: bool = False
    ) -> None:
        from rich.console import Group  # lazy: rich costs start-up time
        from rich.panel import Panel
        from rich.text import Text

        self.end_text()
        status = "error" if output.is_error else "ok"
        body = Group(
            Text.assemble(("args   ", "bold"), _clip(_arguments(call))),
            Text.assemble(("result ", "bold"), _clip(output.as_text())),
        )
        marks = [status, *(["repaired"] if repaired else []), *(["from text"] if from_text else [])]
        title = Text(" · ".join([call.name, *marks]))
        self.console.print(
            Panel(
                body,
                title=title,
                title_align="left",
                border_style="red" if output.is_error else "cyan",
                expand=False,
            )
        )

    def tools(self, agent: AgentLoop) -> None:
        """``/tools``: what the model is given now, and how many tools are deferred."""
        from rich.text import Text

        params = agent.params()
        deferred = params.exposition.deferred if params.exposition else ()
        for entry in params.entries:
            self.console.print(Text.assemble((entry.name, "bold"), "  ", entry.summary))
        self.console.print(
            Text(f"{plural(len(params.entries), 'tool')} shown, {len(deferred)} behind tool_search")
        )

    def status(self, agent: AgentLoop, runtime: ToolRuntime, model_id: str) -> None:
        """``/status``: model, window, tools, servers, tokens used and repair counters."""
        from rich.text import Text

        info = agent.model_info()
        params = agent.params()
        deferred = params.exposition.deferred if params.exposition else ()
        lines = [
            f"model    {model_id} ({info.provider}: {info.id}), "
            f"context window {info.context_window or 'unknown'}",
            f"tools    {len(params.entries)} shown, {len(deferred)} deferred",
            f"tokens   {agent.usage.input_tokens} in, {agent.usage.output_tokens} out",
            "repair   " + ", ".join(f"{k} {v}" for k, v in asdict(agent.repairer.stats).items()),
        ]
        from pegboard.service import Service

        for server in Service.of(runtime).servers.all_statuses():
            detail = f" ({server.error})" if server.error else ""
            lines.append(
                f"server   {server.server_id}: {server.state}, "
                f"{plural(server.tool_count, 'tool')}{detail}"
            )
        for line in lines:
            self.console.print(Text(line))


def message_json(message: Message) -> dict[str, Any]:
    """One transcript entry: role, content, the tool calls made or the call answered."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": _arguments(c)} for c in message.tool_calls
        ]
    if message.role == "tool":
        output = message.tool_output
        out |= {
            "tool_call_id": message.tool_call_id,
            "content": output.as_text(),
            "is_error": output.is_error,
        }
    return out


def transcript_json(agent: AgentLoop, result: TurnResult, model_id: str) -> dict[str, Any]:
    """``--once --json``: the answer, the turn's messages and the counters."""
    return {
        "model": model_id,
        "answer": result.answer,
        "rounds": result.rounds,
        "capped": result.capped,
        "messages": [message_json(m) for m in result.messages],
        "repair": asdict(agent.repairer.stats),
        "usage": asdict(agent.usage),
    }

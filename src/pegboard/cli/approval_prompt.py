"""Approval on the terminal: the :class:`~pegboard.approval.ApprovalHandler` of the CLI.

The human sees the tool, its namespace, its description and the arguments pretty-printed;
everything a tool or a model wrote is shown as plain text (rich markup in it does not render)
through :func:`~pegboard.core.redact.shown`: controls, bidi overrides and zero-width
characters appear as ``\\uXXXX`` escapes, so ``\\u202etxt.exe`` cannot display reordered.
Answers: allow once, allow for the session (the same call of the same tool definition is not
asked again), or deny with an optional reason, which the model reads. With no terminal on
stdin nobody can answer: the call is denied, and the message names ``--yes``.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from typing import TYPE_CHECKING, TextIO

import anyio
import anyio.from_thread
import anyio.lowlevel

from pegboard.calls.approval import (
    ApprovalHandler,
    ApprovalRequest,
    CallbackApprovalHandler,
    Decision,
)
from pegboard.core.redact import shown
from pegboard.errors import ApprovalDenied

if TYPE_CHECKING:
    from rich.console import Console

_CHOICES: dict[str, Decision] = {"o": "allow_once", "s": "allow_session", "d": "deny"}


def cli_approval(yes: bool) -> ApprovalHandler:
    """The approval handler of a command: approve every gated call (``--yes``), or ask on
    the terminal."""
    if yes:
        return CallbackApprovalHandler(lambda _request: "allow_once")
    return TerminalApprovalHandler()


class TerminalApprovalHandler:
    """Asks on the terminal whether a gated call may run.

    ``stdin`` defaults to ``sys.stdin`` and ``console`` to one on stderr (stdout stays the
    command's output). ``interactive`` defaults to whether ``stdin`` is a terminal.
    ``yes_option`` is the flag the non-interactive message tells the user to pass.
    """

    def __init__(
        self,
        *,
        stdin: TextIO | None = None,
        console: Console | None = None,
        interactive: bool | None = None,
        yes_option: str = "--yes",
    ) -> None:
        self._stdin = stdin
        self._console = console
        self._interactive = interactive
        self._yes_option = yes_option
        self._lock = anyio.Lock()  # concurrent calls of one turn ask one at a time

    async def request_approval(self, request: ApprovalRequest) -> Decision:
        stdin = self._stdin if self._stdin is not None else sys.stdin
        interactive = self._interactive
        if interactive is None:
            interactive = stdin is not None and stdin.isatty()
        if not interactive:
            raise ApprovalDenied(
                f"Tool {request.tool_name} needs approval, but stdin is not a terminal, so "
                f"nobody can be asked; it was not run. Rerun with {self._yes_option} to approve "
                "gated tools without asking.",
                tool_name=request.tool_name,
            )
        async with self._lock:
            decision, reason = await self._in_daemon_thread(request, stdin)
        if decision == "deny":
            because = f" (reason: {reason})" if reason else ""
            raise ApprovalDenied(
                f"The user denied the call to {request.tool_name}{because}; it was not run. "
                "Do not retry it unchanged: ask the user or take another approach.",
                tool_name=request.tool_name,
            )
        return decision

    async def _in_daemon_thread(
        self, request: ApprovalRequest, stdin: TextIO
    ) -> tuple[Decision, str]:
        """Run the blocking prompt in a daemon thread: on Ctrl-C (or a cancelled call) the
        process must exit, not wait for a line that will never be typed, as it would for
        an anyio worker thread."""
        token = anyio.lowlevel.current_token()
        done = anyio.Event()
        outcome: list[tuple[Decision, str] | BaseException] = []

        def work() -> None:
            try:
                outcome.append(self._ask(request, stdin))
            except BaseException as exc:  # handed to the waiting task, re-raised there
                outcome.append(exc)
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
                anyio.from_thread.run_sync(done.set, token=token)

        threading.Thread(target=work, name="pegboard-approval", daemon=True).start()
        await done.wait()
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    def _ask(self, request: ApprovalRequest, stdin: TextIO) -> tuple[Decision, str]:
        from rich.console import Console, Group  # lazy: rich costs start-up time
        from rich.panel import Panel
        from rich.prompt import Prompt
        from rich.text import Text

        console = self._console or Console(stderr=True)
        arguments = json.dumps(dict(request.arguments), indent=2, ensure_ascii=False, default=str)
        lines = [
            Text.assemble(("tool       ", "bold"), shown(request.tool_name)),
            Text.assemble(("namespace  ", "bold"), shown(request.namespace_label)),
        ]
        if request.description:
            lines.append(Text.assemble(("about      ", "bold"), shown(request.description)))
        lines += [Text("arguments", style="bold"), Text(shown(arguments))]
        console.print(Panel(Group(*lines), title="Approve this tool call?", expand=False))
        choice = Prompt.ask(
            Text("Allow? o = once, s = this same call for the session, d = deny"),
            choices=list(_CHOICES),
            default="d",
            console=console,
            stream=stdin,
        )
        decision = _CHOICES[choice]
        if decision != "deny":
            return decision, ""
        reason = Prompt.ask(
            Text("Reason for the model (optional)"), default="", console=console, stream=stdin
        )
        return decision, reason.strip()

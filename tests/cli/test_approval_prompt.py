import io

import pytest
from rich.console import Console

from pegboard.calls.approval import ApprovalRequest, authorise
from pegboard.calls.grants import MemoryGrantStore
from pegboard.cli.approval_prompt import TerminalApprovalHandler
from pegboard.core.entry import ToolEntry
from pegboard.core.tool import Tool, ToolContext
from pegboard.errors import ApprovalDenied

pytestmark = pytest.mark.anyio

REQUEST = ApprovalRequest(
    tool_name="mcp__mail__send",
    namespace_label="mcp:Mail",
    description="Send an email.",
    arguments={"to": "bob@example.com", "body": "[bold red]HI[/] \x1b[2J"},
    definition_hash="h",
    call_id="c1",
    via="direct",
)


def _handler(answers: str) -> tuple[TerminalApprovalHandler, io.StringIO]:
    screen = io.StringIO()
    console = Console(file=screen, width=80, color_system=None, force_terminal=False)
    handler = TerminalApprovalHandler(stdin=io.StringIO(answers), console=console, interactive=True)
    return handler, screen


@pytest.mark.parametrize(("answer", "decision"), [("o", "allow_once"), ("s", "allow_session")])
async def test_the_prompt_shows_the_call_and_returns_the_choice(answer: str, decision: str) -> None:
    handler, screen = _handler(f"{answer}\n")

    assert await handler.request_approval(REQUEST) == decision

    assert screen.getvalue().splitlines() == [
        "╭─────── Approve this tool call? ───────╮",
        "│ tool       mcp__mail__send            │",
        "│ namespace  mcp:Mail                   │",
        "│ about      Send an email.             │",
        "│ arguments                             │",
        "│ {                                     │",
        '│   "to": "bob@example.com",            │',
        '│   "body": "[bold red]HI[/] \\u001b[2J" │',
        "│ }                                     │",
        "╰───────────────────────────────────────╯",
        "Allow? o = once, s = this same call for the session, d = deny [o/s/d] (d): ",
    ]


async def test_a_denial_carries_the_users_reason_to_the_model() -> None:
    handler, _ = _handler("d\nwrong recipient\n")

    with pytest.raises(ApprovalDenied) as caught:
        await handler.request_approval(REQUEST)

    assert str(caught.value) == (
        "The user denied the call to mcp__mail__send (reason: wrong recipient); it was not "
        "run. Do not retry it unchanged: ask the user or take another approach."
    )


async def test_an_invalid_answer_is_asked_again() -> None:
    handler, screen = _handler("yes\no\n")

    assert await handler.request_approval(REQUEST) == "allow_once"
    assert "Please select one of the available options" in screen.getvalue()


async def test_end_of_input_denies() -> None:
    handler, _ = _handler("")

    with pytest.raises(ApprovalDenied) as caught:
        await handler.request_approval(REQUEST)

    assert str(caught.value).startswith("The user denied the call to mcp__mail__send; ")


async def test_without_a_terminal_the_call_is_denied_with_a_message_naming_yes() -> None:
    screen = io.StringIO()
    handler = TerminalApprovalHandler(stdin=io.StringIO("o\n"), console=Console(file=screen))

    with pytest.raises(ApprovalDenied) as caught:
        await handler.request_approval(REQUEST)

    assert str(caught.value) == (
        "Tool mcp__mail__send needs approval, but stdin is not a terminal, so nobody can be "
        "asked; it was not run. Rerun with --yes to approve gated tools without asking."
    )
    assert screen.getvalue() == ""


async def test_allowing_for_the_session_is_not_asked_again_for_the_same_call() -> None:
    entry = ToolEntry("send", "mail", Tool("Send.", needs_approval=True))
    handler, screen = _handler("s\n")  # one answer only: a second question would read EOF
    grants = MemoryGrantStore()

    for call_id in ("c1", "c2"):
        await authorise(
            entry, {"to": "bob"}, ToolContext(call_id), via="direct", handler=handler, grants=grants
        )
    with pytest.raises(ApprovalDenied):  # other arguments: asked again, and EOF denies
        await authorise(
            entry, {"to": "eve"}, ToolContext("c3"), via="direct", handler=handler, grants=grants
        )

    assert screen.getvalue().count("Approve this tool call?") == 2

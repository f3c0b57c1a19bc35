"""Attack: text a person reads to decide is made to display differently from what it is.

``/home/u/\\u202etxt.exe`` displays as ``/home/u/exe.txt`` with the override raw; an ESC or
U+009B (a one-byte CSI) drives the terminal; zero-width and tag characters hide text. Every
such character must reach the terminal prompt, the elicitation message, status lines and
log records as a visible escape (one function: ``pegboard.core.redact.shown``).
"""

from __future__ import annotations

import io
import logging

import pytest
from rich.console import Console

from pegboard.calls.approval import ApprovalRequest
from pegboard.cli.approval_prompt import TerminalApprovalHandler
from pegboard.core.redact import redact_logs, shown
from pegboard.gateway.approval import approval_message

pytestmark = pytest.mark.anyio

SPOOFS = {
    "\u202e": "\\u202e",  # right-to-left override
    "\u202a": "\\u202a",  # left-to-right embedding
    "\u2066": "\\u2066",  # isolates
    "\u2067": "\\u2067",
    "\u2068": "\\u2068",
    "\u2069": "\\u2069",
    "\u200f": "\\u200f",  # right-to-left mark
    "\u200b": "\\u200b",  # zero-width space
    "\u200d": "\\u200d",  # zero-width joiner
    "\u2060": "\\u2060",  # word joiner
    "\ufeff": "\\ufeff",  # BOM
    "\x9b": "\\u009b",  # C1 CSI
    "\x85": "\\u0085",  # C1 next line
    "\x1b": "\\u001b",  # ESC
    "\r": "\\u000d",  # carriage return: overwrites the line
    "\u2028": "\\u2028",  # line separator
    "\U000e0041": "\\U000e0041",  # tag character (hidden "A")
}


def _request(char: str) -> ApprovalRequest:
    return ApprovalRequest(
        tool_name=f"mcp__fs__del{char}ete",
        namespace_label=f"mcp:fs{char}",
        description=f"Delete a file{char}.",
        arguments={"path": f"/home/u/{char}txt.exe"},
        definition_hash="h",
        call_id="c1",
        via="direct",
    )


@pytest.mark.parametrize("char", sorted(SPOOFS))
async def test_the_terminal_prompt_shows_spoofing_characters_escaped(char: str) -> None:
    screen = io.StringIO()
    console = Console(file=screen, width=200, color_system=None, force_terminal=False)
    handler = TerminalApprovalHandler(stdin=io.StringIO("o\n"), console=console, interactive=True)

    assert await handler.request_approval(_request(char)) == "allow_once"

    text = screen.getvalue()
    assert char not in text
    escaped = "\\r" if char == "\r" else SPOOFS[char]  # JSON already writes CR as \\r
    assert f"/home/u/{escaped}txt.exe" in text
    assert f"mcp__fs__del{SPOOFS[char]}ete" in text
    assert f"Delete a file{SPOOFS[char]}." in text


@pytest.mark.parametrize("char", sorted(SPOOFS))
def test_the_elicitation_message_shows_spoofing_characters_escaped(char: str) -> None:
    message = approval_message(_request(char))

    assert char not in message
    assert message.splitlines()[0] == (
        f"Allow the tool mcp__fs__del{SPOOFS[char]}ete (mcp:fs{SPOOFS[char]}) to run?"
    )
    escaped = "\\r" if char == "\r" else SPOOFS[char]  # JSON already writes CR as \\r
    assert f'"path": "/home/u/{escaped}txt.exe"' in message


@pytest.mark.parametrize("char", sorted(SPOOFS))
def test_log_records_show_spoofing_characters_escaped(
    char: str, caplog: pytest.LogCaptureFixture
) -> None:
    redact_logs(())
    with caplog.at_level(logging.WARNING, logger="pegboard.test"):
        logging.getLogger("pegboard.test").warning("deleting %s", f"/home/u/{char}txt.exe")

    assert caplog.messages == [f"deleting /home/u/{SPOOFS[char]}txt.exe"]


def test_ordinary_text_newlines_tabs_and_scripts_are_shown_unchanged() -> None:
    text = "line 1\n\tcafé 東京 שלום مرحبا 👍"
    assert shown(text) == text

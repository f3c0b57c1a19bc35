"""A modern client sent to the approval page: its rounds, driven by hand with the real SDK
client against an in-process gateway and a real SQLite pending-approval store.

The first round offers the form and, when the admin UI is known and the client opens URLs, a
URL-mode elicitation to the question's page; a retry that leaves the decision to the page waits
for it, answers with a state-only round while nobody decided, and runs the call once the page
(here: the store, as the page's service does) approves it. A client that declared only the URL
mode is never sent a form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import Client

from pegboard import Tool, ToolApplyScope, ToolEntry, ToolRegistry
from pegboard.calls.pending_sqlite import SqlitePendingStore
from pegboard.calls.session import CallSession
from pegboard.gateway.rounds import INPUT_KEY, PAGE_KEY
from pegboard.gateway.server import Gateway
from pegboard.toolsets.exposure import RegistrySurface

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
ADMIN = "http://127.0.0.1:9/admin"
OPENED = {PAGE_KEY: mcp_types.ElicitResult(action="accept")}


def _gateway(tmp_path: Path, ran: list[int], *, pages: bool = True) -> Gateway:
    registry = ToolRegistry()

    def transfer(amount: int) -> str:
        """Transfer money."""
        ran.append(amount)
        return f"sent {amount}"

    registry.register(
        ToolEntry("transfer", "bank", Tool.from_function(transfer, needs_approval=True))
    )
    session = CallSession(pending=SqlitePendingStore(tmp_path / "approvals.db"))
    gateway = Gateway(RegistrySurface(registry, ToolApplyScope, session=session))
    if pages:
        gateway.pages.approval_page = lambda approval_id: f"{ADMIN}/approvals/{approval_id}"
    gateway.pages.wait = 0.2
    return gateway


def _client(gateway: Gateway) -> Client:
    async def never(*_: Any) -> Any:
        raise AssertionError("rounds are driven by hand here")

    return Client(gateway.server, mode=MODERN, elicitation_callback=never)


def _declare(monkeypatch: pytest.MonkeyPatch, capability: mcp_types.ElicitationCapability) -> None:
    """Make the SDK's clients declare ``capability`` (the stamp of every modern request)."""
    from mcp.client.session import ClientSession

    built = ClientSession._build_capabilities

    def declared(self: ClientSession, version: str) -> mcp_types.ClientCapabilities:
        return built(self, version).model_copy(update={"elicitation": capability})

    monkeypatch.setattr(ClientSession, "_build_capabilities", declared)


async def _call(client: Client, **retry: Any) -> Any:
    return await client.session.call_tool(
        "transfer", {"amount": 5}, allow_input_required=True, **retry
    )


def _pending(gateway: Gateway) -> SqlitePendingStore:
    store = gateway.surface.tool_session.calls.pending  # type: ignore[attr-defined]
    assert isinstance(store, SqlitePendingStore)
    return store


async def test_a_retry_left_to_the_page_waits_in_state_only_rounds_then_runs_once(
    tmp_path: Path,
) -> None:
    ran: list[int] = []
    gateway = _gateway(tmp_path, ran)
    with anyio.fail_after(20):
        async with _client(gateway) as client:
            first = await _call(client)
            assert isinstance(first, mcp_types.InputRequiredResult)
            assert first.input_requests is not None
            assert sorted(first.input_requests) == [INPUT_KEY, PAGE_KEY]
            [question] = await _pending(gateway).list()
            page = first.input_requests[PAGE_KEY].params
            assert isinstance(page, mcp_types.ElicitRequestURLParams)
            assert page.url == f"{ADMIN}/approvals/{question.id}"
            assert question.id[:8] in page.message

            waiting = await _call(client, input_responses=OPENED, request_state=first.request_state)
            assert isinstance(waiting, mcp_types.InputRequiredResult)
            assert waiting.input_requests is None  # nothing new to ask: the state only
            assert waiting.request_state not in (None, first.request_state)
            assert ran == []
            assert [q.id for q in await _pending(gateway).list()] == [question.id]

            async def approve_in_a_moment() -> None:
                await anyio.sleep(0.05)
                await SqlitePendingStore(tmp_path / "approvals.db").decide(
                    question.id, "allow_once", decided_by="admin:carol"
                )

            done: Any = waiting
            async with anyio.create_task_group() as tg:
                tg.start_soon(approve_in_a_moment)
                for _ in range(10):  # as the SDK's driver: retry each state-only round
                    done = await _call(client, request_state=done.request_state)
                    if not isinstance(done, mcp_types.InputRequiredResult):
                        break
                    assert done.input_requests is None
            assert isinstance(done, mcp_types.CallToolResult)
            assert done.is_error is not True
            assert ran == [5]
            assert await _pending(gateway).list() == []  # the same question, decided

            again = await _call(client)  # approved once: the next call is asked anew
            assert isinstance(again, mcp_types.InputRequiredResult)
            assert ran == [5]


async def test_a_form_answer_decides_the_question_the_round_asked(tmp_path: Path) -> None:
    ran: list[int] = []
    gateway = _gateway(tmp_path, ran)
    with anyio.fail_after(20):
        async with _client(gateway) as client:
            first = await _call(client)
            [question] = await _pending(gateway).list()
            form = mcp_types.ElicitResult(action="accept", content={"decision": "deny"})
            refused = await _call(
                client,
                input_responses={
                    INPUT_KEY: form,
                    PAGE_KEY: mcp_types.ElicitResult(action="cancel"),
                },
                request_state=first.request_state,
            )
    assert isinstance(refused, mcp_types.CallToolResult)
    assert refused.is_error
    assert ran == []
    [closed] = await _pending(gateway).list(include_closed=True)
    assert (closed.id, closed.decision, closed.decided_by) == (
        question.id,
        "deny",
        "the client's user (form)",
    )


async def test_a_client_of_urls_only_is_sent_the_page_and_no_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = _gateway(tmp_path, [])
    urls_only = mcp_types.ElicitationCapability(url=mcp_types.UrlElicitationCapability())
    with anyio.fail_after(20):
        _declare(monkeypatch, urls_only)
        async with _client(gateway) as client:
            first = await _call(client)
    assert isinstance(first, mcp_types.InputRequiredResult)
    assert first.input_requests is not None
    assert list(first.input_requests) == [PAGE_KEY]


async def test_without_a_known_admin_ui_the_round_is_the_form_alone(tmp_path: Path) -> None:
    gateway = _gateway(tmp_path, [], pages=False)
    with anyio.fail_after(20):
        async with _client(gateway) as client:
            first = await _call(client)
    assert isinstance(first, mcp_types.InputRequiredResult)
    assert first.input_requests is not None
    assert list(first.input_requests) == [INPUT_KEY]


async def test_a_client_of_urls_only_is_queued_while_no_admin_ui_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stdio gateway whose ``pegboard ui`` is not running has no page to send to: the
    call waits in the approvals queue instead (never a form the client did not declare)."""
    gateway = _gateway(tmp_path, [])
    gateway.pages.approval_page = lambda approval_id: None
    _declare(monkeypatch, mcp_types.ElicitationCapability(url=mcp_types.UrlElicitationCapability()))
    with anyio.fail_after(20):
        async with _client(gateway) as client:
            first = await _call(client)
    assert isinstance(first, mcp_types.CallToolResult)
    assert first.is_error
    assert "waits in pegboard's approvals queue" in first.content[0].text  # type: ignore[union-attr]

"""Grants and pending approvals shared by replicas: a ``once`` grant is used by exactly one
call and a question is decided by exactly one decider, however many replicas race for it."""

from __future__ import annotations

import anyio
import pytest

from pegboard.calls.grants import Grant, GrantKey
from pegboard.calls.grants_pg import PostgresGrantStore
from pegboard.calls.pending_pg import PostgresPendingStore
from pegboard.calls.request import ApprovalRequest
from pegboard.errors import ApprovalNotPending
from pegboard.postgres import Database

pytestmark = pytest.mark.anyio

KEY = GrantKey("alice", "mcp__fs__delete", "def-1", "args-1")
REQUEST = ApprovalRequest(
    tool_name="mcp__fs__delete",
    namespace_label="mcp:Files",
    description="Delete a file.",
    arguments={"path": "/tmp/x"},
    definition_hash="def-1",
    call_id="c1",
    via="gateway",
)


async def test_a_once_grant_is_used_by_one_of_many_racing_replicas(pg_url: str) -> None:
    replicas = [PostgresGrantStore(Database(pg_url)) for _ in range(3)]
    try:
        for round_ in range(5):
            await replicas[0].add(Grant(KEY, "once", f"s{round_}"))
            won: list[Grant | None] = []

            async def consume(
                store: PostgresGrantStore, session: str, won: list[Grant | None] = won
            ) -> None:
                won.append(await store.consume(KEY, session))

            async with anyio.create_task_group() as tg:
                for store in replicas * 3:
                    tg.start_soon(consume, store, f"s{round_}")
            assert sum(w is not None for w in won) == 1
    finally:
        for store in replicas:
            store.close()


async def test_a_question_is_decided_once_when_deciders_race(pg_url: str) -> None:
    replicas = [PostgresPendingStore(Database(pg_url)) for _ in range(3)]
    try:
        item = await replicas[0].create(
            REQUEST, principal="alice", session_id="s1", asked_by="gateway"
        )
        outcomes: list[str] = []

        async def decide(store: PostgresPendingStore, decision: str) -> None:
            try:
                await store.decide(item.id, decision, decided_by=decision)  # type: ignore[arg-type]
                outcomes.append(decision)
            except ApprovalNotPending:
                outcomes.append("refused")

        async with anyio.create_task_group() as tg:
            for store in replicas:
                for decision in ("allow_once", "deny"):
                    tg.start_soon(decide, store, decision)
        assert outcomes.count("refused") == 5
        decided = await replicas[2].get(item.id)
        assert decided is not None
        assert decided.decision in outcomes
        assert decided.decided_by == decided.decision
    finally:
        for store in replicas:
            store.close()

"""One suite, every backend: the grant store and the pending-approval store behave the same in
memory, in a real SQLite file and in a real PostgreSQL database (tests/pg/cluster.py); a second
open is another process's view of the same data."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from pegboard.calls.fallback import FallbackGrantStore, FallbackPendingStore
from pegboard.calls.grants import Grant, GrantKey, GrantStore, MemoryGrantStore
from pegboard.calls.grants_pg import PostgresGrantStore
from pegboard.calls.grants_sqlite import SqliteGrantStore
from pegboard.calls.pending import MemoryPendingStore, PendingApprovalStore
from pegboard.calls.pending_pg import PostgresPendingStore
from pegboard.calls.pending_sqlite import SqlitePendingStore
from pegboard.calls.request import ApprovalRequest
from pegboard.errors import ApprovalNotPending

pytestmark = pytest.mark.anyio

# "team": PostgreSQL behind the fallback of a lost store, as the runtime builds them
BACKENDS = ["memory", "sqlite", "postgres", "team"]
KEY = GrantKey("alice", "mcp__fs__delete", "def-1", "args-1")
OTHER_ARGS = GrantKey("alice", "mcp__fs__delete", "def-1", "args-2")
BOB = GrantKey("bob", "mcp__fs__delete", "def-1", "args-1")
REQUEST = ApprovalRequest(
    tool_name="mcp__fs__delete",
    namespace_label="mcp:Files",
    description="Delete a file.",
    arguments={"path": "/tmp/ä", "force": True},
    definition_hash="def-1",
    call_id="c1",
    via="gateway",
)


@pytest.fixture(params=BACKENDS)
def open_grants(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[], GrantStore]]:
    """Opens the store; a second open is the same store (memory) or the same file (SQLite)."""
    memory = MemoryGrantStore()
    opened: list[SqliteGrantStore | PostgresGrantStore | FallbackGrantStore] = []
    pg = request.param in ("postgres", "team")
    url = request.getfixturevalue("pg_url") if pg else ""

    def open_store() -> GrantStore:
        if request.param == "memory":
            return memory
        store: SqliteGrantStore | PostgresGrantStore | FallbackGrantStore = (
            PostgresGrantStore(url) if url else SqliteGrantStore(tmp_path / "approvals.db")
        )
        if request.param == "team":
            store = FallbackGrantStore(store)
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


@pytest.fixture(params=BACKENDS)
def open_pending(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[], PendingApprovalStore]]:
    memory = MemoryPendingStore()
    opened: list[SqlitePendingStore | PostgresPendingStore | FallbackPendingStore] = []
    pg = request.param in ("postgres", "team")
    url = request.getfixturevalue("pg_url") if pg else ""

    def open_store() -> PendingApprovalStore:
        if request.param == "memory":
            return memory
        store: SqlitePendingStore | PostgresPendingStore | FallbackPendingStore = (
            PostgresPendingStore(url) if url else SqlitePendingStore(tmp_path / "approvals.db")
        )
        if request.param == "team":
            store = FallbackPendingStore(store)
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


async def test_a_session_grant_covers_its_session_only_and_is_not_used_up(
    open_grants: Callable[[], GrantStore],
) -> None:
    store = open_grants()
    await store.add(Grant(KEY, "session", "s1", granted_by="terminal"))

    first = await store.consume(KEY, "s1")
    assert first is not None
    assert (first.key, first.scope, first.session_id, first.granted_by) == (
        KEY,
        "session",
        "s1",
        "terminal",
    )
    assert await store.consume(KEY, "s1") == first
    assert await store.consume(KEY, "s2") is None
    assert await store.consume(OTHER_ARGS, "s1") is None
    assert await store.consume(BOB, "s1") is None


async def test_a_once_grant_is_used_up_by_the_first_matching_call(
    open_grants: Callable[[], GrantStore],
) -> None:
    store = open_grants()
    await store.add(Grant(KEY, "once", "s1"))

    assert await store.consume(KEY, "s2") is None
    taken = await store.consume(KEY, "s1")
    assert taken is not None
    assert taken.scope == "once"
    assert await store.consume(KEY, "s1") is None
    assert await store.list() == []


async def test_an_always_grant_covers_every_session_of_its_principal_and_is_preferred(
    open_grants: Callable[[], GrantStore],
) -> None:
    store = open_grants()
    await store.add(Grant(KEY, "once", "s1"))
    await store.add(Grant(KEY, "always", "s1"))

    for session in ("s1", "s2", None):
        found = await store.consume(KEY, session)
        assert found is not None
        assert found.scope == "always"
    assert await store.consume(BOB, "s1") is None
    assert sorted(g.scope for g in await store.list()) == ["always", "once"]  # once kept


async def test_grants_are_listed_by_principal_revoked_and_dropped_with_their_session(
    open_grants: Callable[[], GrantStore],
) -> None:
    store = open_grants()
    await store.add(Grant(KEY, "session", "s1", granted_at=1.0))
    await store.add(Grant(OTHER_ARGS, "always", None, granted_at=2.0))
    await store.add(Grant(BOB, "session", "s1", granted_at=3.0))
    await store.add(Grant(BOB, "session", "s1", granted_by="again", granted_at=4.0))  # replaces

    assert [(g.key, g.granted_at) for g in await store.list()] == [
        (KEY, 1.0),
        (OTHER_ARGS, 2.0),
        (BOB, 4.0),
    ]
    assert [g.key for g in await store.list("bob")] == [BOB]
    assert await store.end_session("s1") == 2
    assert [g.key for g in await store.list()] == [OTHER_ARGS]
    assert await store.revoke(OTHER_ARGS) == 1
    assert await store.revoke(OTHER_ARGS) == 0
    assert await store.list() == []


async def test_grants_outlive_the_store_object(open_grants: Callable[[], GrantStore]) -> None:
    await open_grants().add(Grant(KEY, "always"))

    found = await open_grants().consume(KEY, "a-later-session")
    assert found is not None
    assert found.scope == "always"


async def test_a_question_is_listed_until_decided_with_who_asked_who_decided_and_why(
    open_pending: Callable[[], PendingApprovalStore],
) -> None:
    store = open_pending()
    before = time.time()
    item = await store.create(REQUEST, principal="alice", session_id="s1", asked_by="gateway")

    assert (item.request, item.principal, item.session_id, item.asked_by) == (
        REQUEST,
        "alice",
        "s1",
        "gateway",
    )
    assert item.status() == "pending"
    assert before <= item.created_at < item.expires_at
    assert [i.id for i in await store.list()] == [item.id]
    assert await store.list(principal="bob") == []

    answer = await store.decide(item.id, "deny", decided_by="admin:carol", reason="not today")
    assert (answer.decision, answer.decided_by, answer.reason, answer.status()) == (
        "deny",
        "admin:carol",
        "not today",
        "decided",
    )
    assert await store.list() == []
    [closed] = await store.list(include_closed=True)
    assert closed == answer
    assert await store.get(item.id) == answer
    assert (await open_pending().get(item.id)) == answer  # the record, reopened
    with pytest.raises(ApprovalNotPending, match=r"is decided .*deny by admin:carol"):
        await store.decide(item.id, "allow_once", decided_by="admin:dave")


async def test_an_unknown_question_cannot_be_decided_or_waited_for(
    open_pending: Callable[[], PendingApprovalStore],
) -> None:
    store = open_pending()
    with pytest.raises(ApprovalNotPending, match="No approval request 'nope'"):
        await store.decide("nope", "allow_once", decided_by="x")
    with pytest.raises(ApprovalNotPending):
        await store.wait("nope")
    assert await store.get("nope") is None


async def test_a_question_expires_and_then_cannot_be_decided(
    open_pending: Callable[[], PendingApprovalStore],
) -> None:
    store = open_pending()
    item = await store.create(REQUEST, principal="alice", session_id=None, asked_by="cli", ttl=0.05)

    with anyio.fail_after(5):
        waited = await store.wait(item.id)
    assert waited.status() == "expired"
    assert waited.decision is None
    assert await store.list() == []
    with pytest.raises(ApprovalNotPending, match="is expired"):
        await store.decide(item.id, "allow_once", decided_by="late")


async def test_a_waiting_call_resumes_when_another_store_on_the_same_data_decides(
    open_pending: Callable[[], PendingApprovalStore],
) -> None:
    asking, answering = open_pending(), open_pending()
    item = await asking.create(REQUEST, principal="alice", session_id="s1", asked_by="gateway")
    seen: list[str | None] = []

    async def waiter() -> None:
        seen.append((await asking.wait(item.id)).decision)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await anyio.lowlevel.checkpoint()  # the waiter is waiting
            assert seen == []
            await answering.decide(item.id, "allow_session", decided_by="admin")

    assert seen == ["allow_session"]


async def test_a_lapsing_session_grant_covers_until_it_expires_then_nothing(
    open_grants: Callable[[], GrantStore],
) -> None:
    """A sessionless client's "allow for a while": a session grant with an expiry."""
    store = open_grants()
    now = time.time()
    await store.add(Grant(KEY, "session", "modern-1", granted_by="round", expires_at=now + 60))
    await store.add(Grant(OTHER_ARGS, "session", "modern-1", granted_by="round", expires_at=now))

    found = await open_grants().consume(KEY, "modern-1")
    assert found is not None
    assert (found.scope, found.expires_at) == ("session", now + 60)
    assert await open_grants().consume(KEY, "modern-1") is not None  # not used up
    assert await open_grants().find(OTHER_ARGS, "modern-1") is None  # lapsed
    assert await open_grants().consume(OTHER_ARGS, "modern-1") is None
    assert await open_grants().find(KEY, "modern-2") is None  # another client's session


async def test_an_approval_is_used_once_by_any_store_on_the_same_data_and_after_reopening(
    open_pending: Callable[[], PendingApprovalStore],
) -> None:
    store = open_pending()
    item = await store.create(REQUEST, principal="alice", session_id="s1", asked_by="gateway")
    other = await store.create(REQUEST, principal="alice", session_id="s1", asked_by="gateway")

    assert await store.use(item.id) is True
    assert await store.use(item.id) is False
    assert await open_pending().use(item.id) is False  # another process, or after a restart
    assert await open_pending().use(other.id) is True  # each question has its own mark


async def test_counts_tally_every_decision_and_each_lapsed_question(
    open_pending: Callable[[], PendingApprovalStore],
) -> None:
    store = open_pending()
    assert await store.counts() == {}
    ids = [
        (await store.create(REQUEST, principal="alice", session_id=None, asked_by="x")).id
        for _ in range(4)
    ]
    await store.create(REQUEST, principal="bob", session_id=None, asked_by="x", ttl=0.01)
    await store.create(REQUEST, principal="bob", session_id=None, asked_by="x")  # still open
    await store.decide(ids[0], "allow_once", decided_by="terminal")
    await open_pending().decide(ids[1], "deny", decided_by="admin")  # another process
    await store.decide(ids[2], "deny", decided_by="form")
    await store.decide(ids[3], "allow_session", decided_by="cli")
    await anyio.sleep(0.02)

    assert await open_pending().counts() == {
        "allow_once": 1,
        "allow_session": 1,
        "deny": 2,
        "expired": 1,
    }


async def test_an_approved_once_call_runs_once_across_a_restart_of_the_queue(
    open_pending: Callable[[], PendingApprovalStore],
) -> None:
    """The approvals queue's mark that an approval was used lives in the store: a gateway
    restarted (a new queue, the store reopened) does not run the approved call again."""
    from pegboard.calls.queue import ApprovalQueue, ApprovalQueued

    store = open_pending()
    with pytest.raises(ApprovalQueued) as queued:
        await ApprovalQueue().settle(
            REQUEST, KEY, pending=store, grants=None, session_id="s1", asked_by="gateway"
        )
    await open_pending().decide(queued.value.approval_id, "allow_once", decided_by="cli")

    outcome = await ApprovalQueue().settle(
        REQUEST, KEY, pending=store, grants=None, session_id="s1", asked_by="gateway"
    )
    assert outcome == "allow_once"
    with pytest.raises(ApprovalQueued) as again:  # restarted: asked anew, not run again
        await ApprovalQueue().settle(
            REQUEST, KEY, pending=open_pending(), grants=None, session_id="s1", asked_by="gw"
        )
    assert again.value.approval_id != queued.value.approval_id

"""The audit log file: bounded, rotating, safe with several writer processes, never raising."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from pegboard.calls.audit import CallRecord, audited
from pegboard.calls.audit_log import AuditLog
from pegboard.calls.session import Call, CallSession
from pegboard.core.principal import Principal
from pegboard.core.tool import ToolContext


def _record(i: int) -> CallRecord:
    return CallRecord(
        time=1.5,
        via="direct",
        tool="mcp__fs__read",
        call_id=f"c{i}",
        session_id=None,
        arguments_sha256="0" * 64,
        approval="not_required",
        outcome="ok",
        duration=0.01,
    )


def test_each_record_is_one_json_line_with_its_fields_and_a_time(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")

    log(_record(1))

    [line] = (tmp_path / "audit.jsonl").read_text().splitlines()
    data = json.loads(line)
    assert data["call_id"] == "c1"
    assert data["tool"] == "mcp__fs__read"
    assert data["via"] == "direct"
    assert data["time"] == 1.5


def test_a_missing_data_directory_is_made_at_the_first_record_and_again_if_removed(
    tmp_path: Path,
) -> None:
    home = tmp_path / "data" / "nested"
    log = AuditLog(home / "audit.jsonl")
    log(_record(1))
    shutil.rmtree(tmp_path / "data")  # e.g. a test or a person clearing the data directory
    log(_record(2))
    [line] = (home / "audit.jsonl").read_text().splitlines()
    assert json.loads(line)["call_id"] == "c2"


def test_the_log_rotates_and_never_grows_past_its_bound(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl", max_bytes=2_000, backups=2)

    for i in range(500):
        log(_record(i))

    files = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock"))
    assert files == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]
    assert all((tmp_path / f).stat().st_size <= 2_000 for f in files)
    tail = log.tail(3)
    assert [r["call_id"] for r in tail] == ["c497", "c498", "c499"]


def _write_many(path: str, worker: int) -> None:
    log = AuditLog(path, max_bytes=40_000, backups=50)
    for i in range(200):
        log({"call_id": f"w{worker}-{i}", "tool": "t", "via": "cli", "outcome": "ok"})


def test_concurrent_writer_processes_lose_and_tear_no_line(tmp_path: Path) -> None:
    path = str(tmp_path / "audit.jsonl")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_write_many, args=(path, w)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0

    records = AuditLog(path, backups=50).tail(10_000)
    assert len(records) == 800
    assert len({r["call_id"] for r in records}) == 800


def test_a_log_whose_path_is_a_directory_never_raises_into_the_call(tmp_path: Path) -> None:
    (tmp_path / "audit.jsonl").mkdir()
    log = AuditLog(tmp_path / "audit.jsonl")

    log(_record(1))  # no exception

    assert log.tail(5) == []


class ThreadNoting(AuditLog):
    """The real log, noting which thread appended each batch and how large it was."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.batches: list[tuple[int, int]] = []

    def append(self, *items: dict[str, Any]) -> None:
        self.batches.append((threading.get_ident(), len(items)))
        super().append(*items)


@pytest.mark.anyio
async def test_the_async_sink_writes_in_a_worker_thread_and_batches_concurrent_calls(
    tmp_path: Path,
) -> None:
    log = ThreadNoting(tmp_path / "audit.jsonl")

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(log.write, [_record(i)])
    log.flush()

    assert threading.get_ident() not in {thread for thread, _ in log.batches}
    assert sum(size for _, size in log.batches) == 20
    assert len(log.batches) < 20  # records of calls finishing meanwhile share a write
    assert sorted(r["call_id"] for r in log.tail(50)) == sorted(f"c{i}" for i in range(20))


@pytest.mark.anyio
async def test_each_record_names_the_principal_the_client_and_the_error_class(
    tmp_path: Path,
) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    session = CallSession(audit=log, principal=Principal("alice"), client="inspector")

    async def boom() -> None:
        raise KeyError("x")

    call = Call("t", {}, ToolContext("c1"), "gateway", session)
    with pytest.raises(KeyError):
        await audited(call, boom)
    [record] = log.tail(5)
    assert (record["principal"], record["client"], record["outcome"], record["error_class"]) == (
        "alice",
        "inspector",
        "error",
        "KeyError",
    )


class Held(AuditLog):
    """The real log, whose writer waits at ``gate`` before each batch (a slow disk)."""

    def __init__(self, path: Path, **options: Any) -> None:
        super().__init__(path, **options)
        self.gate = threading.Event()

    def append(self, *items: dict[str, Any]) -> None:
        assert self.gate.wait(30)
        super().append(*items)


@pytest.mark.anyio
async def test_a_call_does_not_wait_for_its_record_and_a_read_in_this_process_sees_it(
    tmp_path: Path,
) -> None:
    log = Held(tmp_path / "audit.jsonl")

    with anyio.fail_after(5):
        await log.write([_record(1)])  # returns while the writer is held
    assert not (tmp_path / "audit.jsonl").exists()
    threading.Timer(0.2, log.gate.set).start()
    # Another reader of the same file in this process (audit tail, the admin page, the
    # service layer) waits for what is queued.
    [record] = AuditLog(tmp_path / "audit.jsonl").tail(5)
    assert record["call_id"] == "c1"


@pytest.mark.anyio
async def test_under_refuse_a_call_waits_until_its_record_is_written(tmp_path: Path) -> None:
    log = Held(tmp_path / "audit.jsonl", on_failure="refuse")
    done = anyio.Event()

    async def call() -> None:
        await log.write([_record(1)])
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await anyio.sleep(0.3)
        assert not done.is_set()  # held with the writer
        log.gate.set()
        with anyio.fail_after(5):
            await done.wait()
    assert [r["call_id"] for r in log.tail(5)] == ["c1"]


def test_close_writes_what_is_queued(tmp_path: Path) -> None:
    log = Held(tmp_path / "audit.jsonl")

    anyio.run(log.write, [_record(1), _record(2)])
    threading.Timer(0.2, log.gate.set).start()
    log.close()

    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    assert [json.loads(line)["call_id"] for line in lines] == ["c1", "c2"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX only: a forked child's writer")
def test_a_forked_child_writes_its_records_with_a_writer_thread_of_its_own(
    tmp_path: Path,
) -> None:
    """The parent's writer thread does not exist in a child: a child's first record starts
    one there, which writes it (else the child's flush would wait for a thread that is not
    there)."""
    log = AuditLog(tmp_path / "audit.jsonl")
    assert log.hand_off is not None  # the synchronous hand-off of a call's record
    log.hand_off([_record(1)])
    log.flush()  # the parent's thread has run

    pid = os.fork()
    if pid == 0:  # the child: exit without atexit handlers, once its record is written
        code = 1
        try:
            log.hand_off([_record(2)])
            log.flush()
            code = 0
        finally:
            os._exit(code)
    status = None
    for _ in range(200):  # 10 s at most
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    log.hand_off([_record(3)])
    log.close()

    assert status is not None
    assert os.waitstatus_to_exitcode(status) == 0
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["call_id"] for line in lines) == ["c1", "c2", "c3"]

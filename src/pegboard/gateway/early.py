"""The first seconds of ``pegboard serve`` on stdio: answer from the ready snapshot while
the rest of pegboard loads.

:func:`start` (called by the ``pegboard`` entry point before anything heavy is imported)
finds the snapshot of this command line (:mod:`pegboard.gateway.ready`) and, when there is one
and stdin/stdout are pipes, starts a thread that reads the client's lines and answers
``initialize``, ``ping`` and ``tools/list`` itself; every other line is kept, in order. When
the full server is ready to read stdin it calls :func:`take_over`: the thread stops and hands
over what it kept, with the ``initialize`` it answered rewritten to the id :data:`REPLAY_ID`
so the SDK's session learns the client's capabilities while its own answer is dropped.

With a snapshot it also starts the upstream stdio servers of the snapshot's ``spawn`` plan
(:mod:`pegboard.mcp.spawn`), so their start-up overlaps pegboard's imports; the transport
takes the running processes over when it connects.
"""

from __future__ import annotations

import json
import os
import select
import stat
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from pegboard.gateway.ready import ReadyAnswers, read_config, read_snapshot, snapshot_path

REPLAY_ID = "pegboard-replayed-initialize"
_CHUNK = 256 * 1024


@dataclass
class Handoff:
    """What the early reader leaves the full server: bytes to read first, and its answers."""

    pending: bytes = b""
    answers: ReadyAnswers | None = None
    eof: bool = False


@dataclass
class _Early:
    snapshot: Path
    answers: ReadyAnswers | None
    stop_r: int = -1
    stop_w: int = -1
    thread: threading.Thread | None = None
    handoff: Handoff = field(default_factory=Handoff)


_state: _Early | None = None


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def start(argv: list[str]) -> None:
    """If ``argv`` is a stdio serve: remember where its snapshot goes and, if one exists,
    start answering from it. Cheap (stdlib) and silent on any failure."""
    global _state
    if sys.platform == "win32" or _state is not None:
        return
    path = snapshot_path(argv)
    if path is None:
        return
    snapshot = read_snapshot(path)
    _state = _Early(path, ReadyAnswers(snapshot) if snapshot else None)
    if _state.answers is not None and _is_pipe(0) and _is_pipe(1):
        _state.stop_r, _state.stop_w = os.pipe()
        _state.thread = threading.Thread(
            target=_serve, args=(_state,), name="pegboard-early", daemon=True
        )
        _state.thread.start()
    if snapshot is not None:  # the upstream servers start while the client is answered and
        from pegboard.mcp import spawn  # pegboard imports (only a serve with a snapshot)

        spawn.prestart(spawn.plan_launches(snapshot.get("spawn"), read_config(argv)))


def snapshot_target() -> Path | None:
    """Where the running serve should keep its ready snapshot (None: not started by
    :func:`start`, e.g. a serve inside a test process)."""
    return _state.snapshot if _state is not None else None


def take_over() -> Handoff | None:
    """Stop the early reader and return what it kept (None if none ran)."""
    if _state is None or _state.thread is None:
        return None
    os.write(_state.stop_w, b"x")
    _state.thread.join()
    os.close(_state.stop_r)
    os.close(_state.stop_w)
    _state.thread = None
    return _state.handoff


def _serve(state: _Early) -> None:
    answers = state.answers
    assert answers is not None
    kept: list[bytes] = []
    buffered = b""
    eof = False
    try:
        while not eof:
            ready, _, _ = select.select([0, state.stop_r], [], [])
            if state.stop_r in ready:
                break
            chunk = os.read(0, _CHUNK)
            eof = not chunk
            *lines, buffered = (buffered + chunk).split(b"\n")
            for line in lines:
                kept.extend(_take(line, answers) if answers is not None else [line + b"\n"])
    except Exception as exc:  # never lose what was read: the full server answers the rest
        print(f"pegboard: the early reader stopped ({exc!r}); continuing", file=sys.stderr)
    state.handoff = Handoff(b"".join(kept) + buffered, answers, eof)


def _take(line: bytes, answers: ReadyAnswers) -> list[bytes]:
    """Answer ``line`` (nothing kept) or keep it for the full server (with its newline)."""
    if not line.strip():
        return []
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return [line + b"\n"]
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return [line + b"\n"]
    try:
        reply = answers.answer(message)
    except Exception as exc:  # a snapshot that passed the checks but cannot answer this
        print(f"pegboard: not answering from the ready snapshot ({exc!r})", file=sys.stderr)
        reply = None
    if reply is None:
        return [line + b"\n"]
    view = memoryview(reply)
    while view:
        view = view[os.write(1, view) :]
    if message.get("method") == "initialize":  # replayed for the SDK's session state
        return [json.dumps({**message, "id": REPLAY_ID}).encode() + b"\n"]
    return []

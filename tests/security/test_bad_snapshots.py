"""Attack: a ready snapshot (data dir ``ready/*.json``) of valid JSON but the wrong shape,
which crashed the early reader so ``initialize`` was never answered until the file changed.

Held: an unusable snapshot is ignored with one warning on stderr, and the start proceeds as a
first start does (the full server answers, then writes a good snapshot).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from pegboard.gateway.ready import read_snapshot, snapshot_path
from tests.gateway.harness import PEGBOARD, STARTUP_BOUND, gateway_env, write_config

pytestmark = pytest.mark.anyio

INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "0"},
}
GOOD: dict[str, Any] = {
    "versions": ["2025-06-18"],
    "init": {"capabilities": {}, "serverInfo": {"name": "x", "version": "1"}},
    "tools": {"2025-06-18": {"tools": []}},
}
BAD = {
    "versions empty": GOOD | {"versions": []},
    "versions a string": GOOD | {"versions": "2025-06-18"},
    "versions of numbers": GOOD | {"versions": [1, 2]},
    "init a list": GOOD | {"init": []},
    "init with a version": GOOD | {"init": {"protocolVersion": "1999-01-01"}},
    "tools a list": GOOD | {"tools": []},
    "tools of a version a list": GOOD | {"tools": {"2025-06-18": []}},
    "not an object": [GOOD],
    "deeply nested": "[" * 100_000 + "]" * 100_000,
    "not json": "{ truncated",
}


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")


@pytest.mark.parametrize("label", sorted(BAD))
def test_a_snapshot_of_the_wrong_shape_is_read_as_none_with_a_warning(
    tmp_path: Path, label: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "snap.json"
    _write(path, BAD[label])

    assert read_snapshot(path) is None
    assert capsys.readouterr().err.startswith(f"pegboard: ignoring the ready snapshot {path}: ")


def test_a_good_snapshot_is_read_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "snap.json"
    _write(path, GOOD)
    assert read_snapshot(path) == GOOD
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("label", ["versions empty", "init a list", "tools of a version a list"])
async def test_serve_answers_initialize_despite_a_bad_snapshot(
    tmp_path: Path, label: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(tmp_path, {})
    env = gateway_env(tmp_path)
    for name in ("PEGBOARD_CONFIG", "PEGBOARD_DATA_DIR"):
        monkeypatch.setenv(name, env[name])
    path = snapshot_path(["serve"])
    assert path is not None
    _write(path, BAD[label])

    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process([PEGBOARD, "serve"], env=env) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            assert process.stderr is not None
            request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}
            await process.stdin.send(json.dumps(request).encode() + b"\n")
            buffered = b""
            while b"\n" not in buffered:
                buffered += await process.stdout.receive()
            answer = json.loads(buffered.split(b"\n", 1)[0])
            await process.stdin.aclose()
            err = ""
            async for chunk in TextReceiveStream(process.stderr):
                err += chunk

    assert answer["id"] == 1
    assert answer["result"]["protocolVersion"] == "2025-06-18"
    assert f"pegboard: ignoring the ready snapshot {path}: " in err

"""The ready snapshot's key and answers (stdlib only, no process)."""

from __future__ import annotations

import json
from pathlib import Path

import mcp_types
import pytest

from pegboard.gateway.ready import (
    CLIENT_CAPABILITIES_KEY,
    PROTOCOL_VERSION_KEY,
    ReadyAnswers,
    read_snapshot,
    snapshot_path,
    write_snapshot,
)

SNAPSHOT = {
    "versions": ["2025-03-26", "2025-06-18"],
    "init": {"capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "pegboard"}},
    "tools": {"2025-06-18": {"tools": [{"name": "a"}]}, "2025-03-26": {"tools": []}},
}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PEGBOARD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PEGBOARD_CONFIG", str(tmp_path / "config.toml"))
    return tmp_path


def test_only_a_stdio_serve_has_a_snapshot(env: Path) -> None:
    assert snapshot_path(["serve", "--http"]) is None
    assert snapshot_path(["serve", "--help"]) is None
    assert snapshot_path(["tools", "list"]) is None
    assert snapshot_path(["--verbose", "serve"]) is None
    path = snapshot_path(["serve"])
    assert path is not None
    assert path.parent == env / "data" / "ready"


def test_the_key_changes_with_the_options_and_the_config_bytes(env: Path) -> None:
    plain = snapshot_path(["serve"])
    assert snapshot_path(["serve", "--no-defer"]) != plain
    assert snapshot_path(["-c", str(env / "other.toml"), "serve"]) != plain
    assert snapshot_path(["--config", str(env / "config.toml"), "serve"]) == plain
    (env / "config.toml").write_text("[meta]\n")
    assert snapshot_path(["serve"]) != plain


def test_a_snapshot_round_trips_and_garbage_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "ready" / "x.json"
    write_snapshot(path, SNAPSHOT)
    assert read_snapshot(path) == SNAPSHOT
    path.write_text("{not json")
    assert read_snapshot(path) is None
    path.write_text('{"versions": []}')
    assert read_snapshot(path) is None


def _ask(answers: ReadyAnswers, message: dict[str, object]) -> object:
    line = answers.answer({"jsonrpc": "2.0", **message})
    return None if line is None else json.loads(line)


def test_initialize_negotiates_and_tools_list_answers_for_that_version() -> None:
    answers = ReadyAnswers(SNAPSHOT)
    assert _ask(answers, {"id": 1, "method": "tools/list"}) is None  # before initialize
    init = _ask(
        answers, {"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}}
    )
    assert init == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"protocolVersion": "2025-03-26", **SNAPSHOT["init"]},  # type: ignore[dict-item]
    }
    listed = _ask(answers, {"id": "l", "method": "tools/list"})
    assert listed == {"jsonrpc": "2.0", "id": "l", "result": {"tools": []}}
    assert answers.listed == {"tools": []}


def test_an_unknown_version_gets_the_latest_and_odd_requests_go_to_the_full_server() -> None:
    answers = ReadyAnswers(SNAPSHOT)
    init = _ask(answers, {"id": 1, "method": "initialize", "params": {"protocolVersion": "1999"}})
    assert init["result"]["protocolVersion"] == "2025-06-18"  # type: ignore[index]
    assert _ask(answers, {"id": 2, "method": "tools/list", "params": {"cursor": "x"}}) is None
    assert _ask(answers, {"id": 2, "method": "tools/list", "params": [1]}) is None
    assert _ask(answers, {"id": True, "method": "ping"}) is None
    assert _ask(answers, {"method": "ping"}) is None
    assert _ask(answers, {"id": 3, "method": "tools/call"}) is None
    assert _ask(answers, {"id": 4, "method": "ping"}) == {"jsonrpc": "2.0", "id": 4, "result": {}}


MODERN_SNAPSHOT = SNAPSHOT | {
    "tools": {**SNAPSHOT["tools"], "2026-07-28": {"tools": [{"name": "m"}], "ttlMs": 2000}},  # type: ignore[dict-item]
    "modern": ["2026-07-28"],
    "discover": {"2026-07-28": {"supportedVersions": ["2026-07-28"], "resultType": "complete"}},
}


def _modern(version: object = "2026-07-28", **extra: object) -> dict[str, object]:
    return {
        "_meta": {
            PROTOCOL_VERSION_KEY: version,
            CLIENT_CAPABILITIES_KEY: {},
        },
        **extra,
    }


def test_the_envelope_keys_are_the_sdks() -> None:
    assert (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) == (
        mcp_types.PROTOCOL_VERSION_META_KEY,
        mcp_types.CLIENT_CAPABILITIES_META_KEY,
    )


def test_a_modern_client_gets_discover_and_its_tools_list_without_a_handshake() -> None:
    answers = ReadyAnswers(MODERN_SNAPSHOT)
    discover = _ask(answers, {"id": 1, "method": "server/discover", "params": _modern()})
    listed = _ask(answers, {"id": 2, "method": "tools/list", "params": _modern()})

    assert discover == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": MODERN_SNAPSHOT["discover"]["2026-07-28"],
    }  # type: ignore[index]
    assert listed == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {"tools": [{"name": "m"}], "ttlMs": 2000},
    }
    assert (answers.listed_version, answers.version) == ("2026-07-28", None)


def test_odd_modern_requests_and_old_snapshots_go_to_the_full_server() -> None:
    answers = ReadyAnswers(MODERN_SNAPSHOT)
    half = {"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}  # no capabilities: the SDK says so
    assert _ask(answers, {"id": 1, "method": "server/discover", "params": half}) is None
    assert _ask(answers, {"id": 1, "method": "server/discover", "params": _modern("2099")}) is None
    assert _ask(answers, {"id": 1, "method": "tools/list", "params": _modern(cursor="x")}) is None
    assert _ask(answers, {"id": 1, "method": "ping", "params": _modern()}) is None
    assert _ask(answers, {"id": 1, "method": "tools/call", "params": _modern()}) is None
    # A snapshot written before modern answers existed answers the handshake only.
    old = ReadyAnswers(SNAPSHOT)
    assert _ask(old, {"id": 1, "method": "server/discover", "params": _modern()}) is None
    # After a handshake, a modern request is the SDK's to refuse.
    _ask(answers, {"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}})
    assert _ask(answers, {"id": 2, "method": "tools/list", "params": _modern()}) is None

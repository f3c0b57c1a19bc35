"""A definition that passed the listing checks is not checked again, here or after a restart
(its digest kept in the data directory); a changed one is, and a refused one always is."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest

from pegboard.deferral.kept_counts import keep_counts, read_counts
from pegboard.mcp import McpCatalog, SqliteCatalogStore, checked, listing
from pegboard.mcp.checked import CheckedDefinitions
from tests.mcp.conftest import scripted

pytestmark = pytest.mark.anyio

BAD = ["bad_output", "bad_props", "bad_subschema", "bad_type", "no_schema"]


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names tool_problem is asked about (the real checks still run), with a fresh
    process table of passes and the kept file written at once."""
    asked: list[str] = []
    real = listing.tool_problem

    def counted(raw: object, protocol_version: str = listing.DEFAULT_PROTOCOL_VERSION) -> object:
        asked.append(str(raw.get("name")) if isinstance(raw, dict) else "?")
        return real(raw, protocol_version)

    monkeypatch.setattr(listing, "tool_problem", counted)
    monkeypatch.setattr(checked, "_default", CheckedDefinitions())
    return asked


def _kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The data directory's file of passes, kept by this process's table (written at once)."""
    kept = tmp_path / "checked-definitions.bin"
    monkeypatch.setattr("pegboard.deferral.kept_counts.SAVE_DELAY_S", 0.0)
    keep_counts(checked.default_checked(), kept)
    return kept


def _restart(path: Path, monkeypatch: pytest.MonkeyPatch) -> CheckedDefinitions:
    """A new process's table: nothing but what ``path`` kept."""
    table = CheckedDefinitions()
    monkeypatch.setattr(checked, "_default", table)
    keep_counts(table, path)
    return table


class _Skips(logging.Handler):
    """The names of the tools the catalog logs as skipped."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.names: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "skipping tool" in record.msg:
            self.names.append(str(record.args[1]))  # type: ignore[index]


async def _listed(tmp_path: Path, *modes: str) -> tuple[list[str], list[str]]:
    """(visible tool names, skipped tool names) after one refresh of the scripted server."""
    config = scripted("s", "bad-schema", mode_file=tmp_path / "modes")
    (tmp_path / "modes").write_text(" ".join(modes))
    catalog = McpCatalog([config], SqliteCatalogStore(tmp_path / "catalog.sqlite3"))
    skips = _Skips()
    logger = logging.getLogger("pegboard.mcp.catalog")
    logger.addHandler(skips)
    try:
        async with catalog.running(prewarm=False):
            visible = sorted(t.name for t in await catalog.refresh_tools("s"))
    finally:
        logger.removeHandler(skips)
    return visible, sorted(skips.names)


async def test_a_passed_definition_is_not_checked_again_after_a_restart_and_a_refused_one_is(
    tmp_path: Path, checks: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = _kept(tmp_path, monkeypatch)

    first = await _listed(tmp_path)
    asked_first = sorted(checks)
    checks.clear()
    again = await _listed(tmp_path)  # the same process lists the server again
    asked_again = sorted(checks)
    checks.clear()

    later = _restart(kept, monkeypatch)
    after_restart = await _listed(tmp_path)
    asked_after_restart = sorted(checks)

    assert first == again == after_restart == (["tool_0", "tool_1", "tool_2"], BAD)
    assert asked_first == sorted(["tool_0", "tool_1", "tool_2", *BAD])
    assert asked_again == BAD  # refused ones are checked (and refused) every time
    assert asked_after_restart == BAD
    assert len(later) == 3


async def test_a_changed_definition_is_checked_again(
    tmp_path: Path, checks: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    await _listed(tmp_path)
    checks.clear()

    visible, _ = await _listed(tmp_path, "rug-pull")  # tool_0's description changes

    assert sorted(checks) == sorted(["tool_0", *BAD])
    assert visible == ["tool_1", "tool_2"]  # checked, then held for trust (pinned before)


async def test_a_poisoned_rug_pull_is_still_held_for_trust_after_a_restart(
    tmp_path: Path, checks: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = _kept(tmp_path, monkeypatch)
    modes = tmp_path / "modes"
    config = scripted("s", mode_file=modes)
    store = tmp_path / "catalog.sqlite3"

    catalog = McpCatalog([config], SqliteCatalogStore(store))
    async with catalog.running(prewarm=False):
        await catalog.refresh_tools("s")  # trusted at first sight
        modes.write_text("rug-pull")
        await catalog.refresh_tools("s")  # its digest passes the checks: it is kept
        held = catalog.status("s").pending_trust

    _restart(kept, monkeypatch)
    checks.clear()
    catalog = McpCatalog([config], SqliteCatalogStore(store))
    async with catalog.running(prewarm=False):
        visible = sorted(t.name for t in await catalog.refresh_tools("s"))
        held_after_restart = catalog.status("s").pending_trust

    assert held == held_after_restart == ("tool_0",)
    assert checks == []  # nothing was checked again: passing the checks trusts nothing
    assert visible == ["tool_1", "tool_2"]


@pytest.mark.parametrize(
    "damage",
    [
        b"garbage",
        b"pegboard-checked-definitions 0 1 2 3\n" + b"x" * 20,  # another checks version
        checked._head() + b"cut short",
    ],
)
async def test_a_corrupt_or_foreign_digest_file_is_ignored_and_every_definition_checked(
    tmp_path: Path,
    checks: list[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    damage: bytes,
) -> None:
    kept = tmp_path / "checked-definitions.bin"
    kept.write_bytes(damage)
    monkeypatch.setattr("pegboard.deferral.kept_counts.SAVE_DELAY_S", 0.0)

    with caplog.at_level(logging.WARNING, logger="pegboard"):
        table = _restart(kept, monkeypatch)
        listed = await _listed(tmp_path)

    assert "ignoring the unreadable checked definitions" in caplog.text
    assert sorted(checks) == sorted(["tool_0", "tool_1", "tool_2", *BAD])
    assert listed == (["tool_0", "tool_1", "tool_2"], BAD)
    assert len(table) == 3
    for _ in range(200):  # rewritten by the save thread (no delay here)
        if len(read_counts(CheckedDefinitions(), kept)) == 3:
            break
        await anyio.sleep(0.05)
    assert len(read_counts(CheckedDefinitions(), kept)) == 3


def test_the_digest_depends_on_the_protocol_version_and_every_byte() -> None:
    raw = {"name": "t", "inputSchema": {"type": "object"}}
    digest = checked.definition_digest(raw, "2025-11-25")
    assert digest is not None
    assert len(digest) == 16
    assert checked.definition_digest(dict(raw), "2025-11-25") == digest
    assert checked.definition_digest(raw, "2026-07-28") != digest
    assert checked.definition_digest({**raw, "description": "x"}, "2025-11-25") != digest
    assert checked.definition_digest({"name": float("nan")}, "2025-11-25") is None

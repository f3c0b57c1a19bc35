"""The CLI fixtures of tests/cli (config file, data directory, CliRunner) for attack tests,
and the names the poisoning checks are run on."""

import pytest

from pegboard.mcp import poison
from tests.cli.conftest import config_path, invoke

__all__ = ["config_path", "invoke", "poison_checks"]


@pytest.fixture
def poison_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names :func:`~pegboard.mcp.poison.poison_flags` checks (the real checks still run),
    with a fresh process table of known flags (none known from other tests)."""
    checked: list[str] = []
    real = poison.poison_flags
    monkeypatch.setattr(
        poison, "poison_flags", lambda raw: checked.append(raw["name"]) or real(raw)
    )
    monkeypatch.setattr(poison, "_default", poison.KnownFlags())
    return checked

"""The environment's off switches: 1, true and yes switch off; anything else, or unset, not."""

from __future__ import annotations

import pytest

from pegboard._switches import switched_off


@pytest.mark.parametrize("value", ["1", "true", "yes"])
def test_one_true_and_yes_switch_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("PEGBOARD_TEST_SWITCH", value)
    assert switched_off("PEGBOARD_TEST_SWITCH") is True


@pytest.mark.parametrize("value", ["", "0", "false", "no", "TRUE ", "2"])
def test_other_values_leave_it_on(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("PEGBOARD_TEST_SWITCH", value)
    assert switched_off("PEGBOARD_TEST_SWITCH") is False


def test_unset_leaves_it_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PEGBOARD_TEST_SWITCH", raising=False)
    assert switched_off("PEGBOARD_TEST_SWITCH") is False

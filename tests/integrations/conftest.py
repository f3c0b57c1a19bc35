from collections.abc import Iterator

import pytest

from tests.integrations import loopback


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    loopback.only_loopback()
    try:
        yield
    finally:
        loopback.restore()

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pg.cluster import Cluster, require_binaries


@pytest.fixture
def own_cluster() -> Iterator[Cluster]:
    """A cluster of its own, for a test that stops and starts it under what it tests."""
    cluster = Cluster.create(require_binaries())
    try:
        yield cluster
    finally:
        cluster.destroy()

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests import blocking
from tests.model_server import ScriptedModel

if TYPE_CHECKING:
    from tests.pg.cluster import Cluster


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True, scope="session")
def _vector_cache_in_a_temporary_directory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """``default_index()`` caches catalog vectors in the user cache directory; tests keep
    theirs in a temporary one instead (tests of that default set their own value)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PEGBOARD_CACHE_DIR", str(tmp_path_factory.mktemp("vector-cache")))
        yield


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """Two short notes for a knowledge base; the pet policy is asked for in other words."""
    root = tmp_path / "notes"
    root.mkdir()
    (root / "pets.md").write_text(
        "# Pet policy\n\nEmployees may bring a well-behaved canine to the workplace on Fridays.\n"
    )
    (root / "parking.md").write_text("# Car park\n\nThe garage has 40 spaces.\n")
    return root


@pytest.fixture
def model_server() -> Iterator[ScriptedModel]:
    """A scripted model endpoint on 127.0.0.1 (OpenAI and Anthropic wire formats); add turns
    with ``model_server.add(Turn(...))``; see tests/model_server.py."""
    with ScriptedModel() as server:
        yield server


@pytest.fixture
async def _event_loop_watchdog() -> AsyncIterator[None]:
    async with blocking.watch_the_loop() as seen:
        yield
    if seen.longest:
        pytest.fail(blocking.report(seen))


@pytest.fixture(autouse=True)
def _no_blocked_event_loop(request: pytest.FixtureRequest) -> None:
    """Every async test runs under the blocked-loop detector (tests/blocking.py)."""
    if blocking.THRESHOLD > 0 and "anyio_backend" in request.fixturenames:
        request.getfixturevalue("_event_loop_watchdog")


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL cluster for the session (tests/pg/cluster.py); skips without
    the Debian package postgresql, fails without it when CI=true."""
    from tests.pg.cluster import Cluster, require_binaries

    cluster = Cluster.create(require_binaries())
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> Iterator[str]:
    """The URL (with its password) of a fresh, empty database of the session's cluster."""
    name = pg_cluster.create_database()
    try:
        yield pg_cluster.url(name)
    finally:
        pg_cluster.drop_database(name)

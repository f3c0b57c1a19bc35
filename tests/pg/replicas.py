"""Gateway replicas for tests: ``pegboard serve --http`` processes sharing one PostgreSQL store,
each with a data directory of its own (as on its own machine)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import Process

from tests.gateway.harness import PEGBOARD, STARTUP_BOUND, gateway_env


def replica_env(tmp_path: Path, name: str, store_url: str | None) -> dict[str, str]:
    """The environment of replica ``name``: the shared config and store (None: SQLite in its
    data dir), its own data dir."""
    env = gateway_env(tmp_path) | {"PEGBOARD_DATA_DIR": str(tmp_path / f"data-{name}")}
    env["PEGBOARD_REPLICA"] = name  # how its audit records name it
    return env | ({"PEGBOARD_STORE_URL": store_url} if store_url else {})


@dataclass
class Replica:
    name: str
    process: Process
    url: str  # the MCP endpoint, http://127.0.0.1:PORT/mcp

    @property
    def port(self) -> int:
        return int(self.url.split(":")[2].split("/")[0])


async def _served_url(process: Process) -> str:
    assert process.stderr is not None
    seen = b""
    with anyio.fail_after(STARTUP_BOUND):
        while b"pegboard serving MCP on " not in seen or not seen.split(
            b"pegboard serving MCP on "
        )[1].count(b"\n"):
            chunk = await process.stderr.receive()
            seen += chunk
    return seen.split(b"pegboard serving MCP on ")[1].split(b"\n")[0].decode()


@asynccontextmanager
async def replica(
    tmp_path: Path, name: str, store_url: str | None, *args: str, port: int = 0
) -> AsyncIterator[Replica]:
    """One replica (``serve --http --no-defer`` plus ``args``), terminated on exit."""
    command = [PEGBOARD, "serve", "--http", "--port", str(port), "--no-defer", *args]
    env = replica_env(tmp_path, name, store_url)
    async with await anyio.open_process(command, env=env) as process:
        try:
            yield Replica(name, process, await _served_url(process))
        finally:
            if process.returncode is None:
                process.terminate()
                with anyio.move_on_after(10):
                    await process.wait()
                if process.returncode is None:
                    process.kill()


async def run_cli_on(tmp_path: Path, name: str, store_url: str, *args: str) -> tuple[int, str, str]:
    """``pegboard ARGS`` as on machine ``name`` (its data dir) on the shared store: the exit
    code, stdout and stderr."""
    done = await anyio.run_process(
        [PEGBOARD, *args], env=replica_env(tmp_path, name, store_url), check=False
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def shared_audit(tmp_path: Path, store_url: str) -> list[dict[str, str]]:
    """Every replica's audit records, read as ``pegboard audit tail --json`` shows them."""
    code, out, err = await run_cli_on(
        tmp_path, "auditor", store_url, "audit", "tail", "--json", "-n", "10000"
    )
    assert code == 0, err
    records: list[dict[str, str]] = json.loads(out)
    return records

"""The event loop ``pegboard serve`` runs on: uvloop's when it is installed (the ``uvloop``
extra, in the dev environment), asyncio's without it or with ``PEGBOARD_NO_UVLOOP=1``."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.gateway.harness import (
    PEGBOARD,
    STARTUP_BOUND,
    RawRpc,
    gateway_env,
    run_cli,
    sdk_server,
    write_config,
)

pytestmark = pytest.mark.anyio


def _loop_of(pid: int) -> str:
    """Which event loop a serving process runs: uvloop's C module mapped, or asyncio's."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return "uvloop" if "/uvloop/loop." in maps else "asyncio"


def _hidden_uvloop(tmp_path: Path) -> dict[str, str]:
    hidden = tmp_path / "hide" / "uvloop"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('not installed here')\n")
    return {"PYTHONPATH": str(hidden.parent)}


@pytest.mark.parametrize(
    ("setup", "expected"),
    [("installed", "uvloop"), ("switched off", "asyncio"), ("not installed", "asyncio")],
)
async def test_serve_runs_on_uvloop_when_installed_and_on_asyncio_otherwise(
    tmp_path: Path, setup: str, expected: str
) -> None:
    write_config(tmp_path, {"servers": {"toolbox": sdk_server()}})
    await run_cli(tmp_path, "servers", "refresh")
    extra = {
        "installed": {},
        "switched off": {"PEGBOARD_NO_UVLOOP": "1"},
        "not installed": _hidden_uvloop(tmp_path),
    }[setup]
    args = [PEGBOARD, "serve", "--no-defer"]
    with anyio.fail_after(STARTUP_BOUND):
        async with await anyio.open_process(args, env=gateway_env(tmp_path) | extra) as process:
            wire = RawRpc(process)
            await wire.initialize()
            params = {"name": "mcp__toolbox__echo", "arguments": {"text": "looped"}}
            answer = await wire.request("tools/call", params)
            loop = _loop_of(process.pid)
            process.terminate()

    assert answer["result"]["content"] == [{"type": "text", "text": "looped"}]
    assert loop == expected

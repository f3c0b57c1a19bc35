import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from typer.testing import CliRunner, Result

from pegboard.cli.app import app
from pegboard.config import load_config
from pegboard.mcp import SqliteCatalogStore, StoredServer

SDK_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "sdk_server.py"

Invoke = Callable[..., Result]


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    return tmp_path / "config.toml"


@pytest.fixture
def invoke(tmp_path: Path, config_path: Path, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    monkeypatch.setenv("PEGBOARD_CONFIG", str(config_path))
    monkeypatch.setenv("PEGBOARD_DATA_DIR", str(tmp_path / "data"))
    runner = CliRunner()

    def run(*args: str) -> Result:
        return runner.invoke(app, list(args))

    return run


def write(config_path: Path, config: dict[str, Any]) -> None:
    config_path.write_text(tomli_w.dumps(config), encoding="utf-8")


def sdk_server() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SDK_SERVER), "stdio"]}


def warm_cache(config_path: Path, server_id: str, tools: list[dict[str, Any]]) -> None:
    """Write ``tools`` into the on-disk catalog as if ``server_id`` had been refreshed."""
    loaded = load_config(config_path)
    fingerprint = loaded.config.servers[server_id].fingerprint
    store = SqliteCatalogStore(loaded.catalog_path)
    store.put(
        StoredServer(
            server_id,
            fingerprint=fingerprint,
            tools=tuple(tools),
            fetched_at=1_700_000_000.0,
        )
    )
    store.close()


def as_json(result: Result) -> Any:
    return json.loads(result.stdout)

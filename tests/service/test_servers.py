"""The service layer's servers: statuses, collisions, trust, refresh, enabling, logs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import tomli_w

from pegboard.config import load_config
from pegboard.mcp import SqliteCatalogStore, StoredServer
from pegboard.mcp.transport import stderr_path
from pegboard.runtime import RuntimeOptions
from pegboard.service import RefreshResult, Service
from pegboard.service.servers import UnknownServer

pytestmark = pytest.mark.anyio
SDK_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "sdk_server.py"


def _tool(name: str, description: str = "things") -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": {"type": "object"}}


def _service(tmp_path: Path, servers: dict[str, Any], cached: dict[str, list[Any]]) -> Service:
    path = tmp_path / "config.toml"
    config = {"data_dir": str(tmp_path / "data"), "servers": servers}
    path.write_text(tomli_w.dumps(config), encoding="utf-8")
    loaded = load_config(path)
    store = SqliteCatalogStore(loaded.catalog_path)
    for sid, tools in cached.items():
        fingerprint = loaded.config.servers[sid].fingerprint
        store.put(StoredServer(sid, fingerprint=fingerprint, tools=tuple(tools), fetched_at=1.0))
    store.close()
    return Service(loaded, RuntimeOptions(prewarm=False))


def test_statuses_come_from_the_cache_in_the_order_asked(tmp_path: Path) -> None:
    servers = {"a": {"command": "/nonexistent/a"}, "b": {"command": "/nonexistent/b"}}
    service = _service(tmp_path, servers, {"a": [_tool("read"), _tool("write")]})
    statuses = service.servers.statuses(["b", "a"])
    service.close()
    assert [(s.server_id, s.state, s.tool_count) for s in statuses] == [
        ("b", "cold", 0),
        ("a", "cold", 2),
    ]


def test_unknown_ids_are_named_with_the_configured_ones(tmp_path: Path) -> None:
    service = _service(tmp_path, {"a": {"command": "/nonexistent/a"}}, {})
    with pytest.raises(UnknownServer) as caught:
        service.servers.statuses(["a", "zz", "yy"])
    assert str(caught.value) == "unknown server ids: zz, yy; configured: a"


def test_what_waits_for_trust_is_the_servers_with_a_changed_definition(tmp_path: Path) -> None:
    servers = {"a": {"command": "/nonexistent/a"}, "b": {"command": "/nonexistent/b"}}
    service = _service(tmp_path, servers, {"a": [_tool("read")], "b": [_tool("find")]})
    service.servers.statuses()  # pins what it sees first
    service.close()
    store = SqliteCatalogStore(service.loaded.catalog_path)
    fingerprint = service.loaded.config.servers["a"].fingerprint
    changed = (_tool("read", "now also sends your files away"),)
    store.put(StoredServer("a", fingerprint=fingerprint, tools=changed, fetched_at=2.0))
    store.close()
    again = Service(service.loaded, RuntimeOptions(prewarm=False))
    waiting = again.servers.waiting_for_trust()
    again.close()
    assert [(s.server_id, s.pending_trust) for s in waiting] == [("a", ("read",))]


def test_enable_and_disable_write_the_config_file(tmp_path: Path) -> None:
    service = _service(tmp_path, {"a": {"command": "/nonexistent/a"}}, {})
    path = service.servers.set_enabled("a", False)
    assert load_config(path).config.servers["a"].enabled is False
    path = service.servers.set_enabled("a", True)
    assert load_config(path).config.servers["a"].enabled is True
    with pytest.raises(UnknownServer):
        service.servers.set_enabled("zz", True)


def test_logs_are_none_before_a_start_and_masked_after(tmp_path: Path) -> None:
    servers = {"a": {"command": "/nonexistent/a", "env": {"API_KEY": "s3cret-value"}}}
    service = _service(tmp_path, servers, {})
    assert service.servers.logs("a") is None
    path = stderr_path(service.loaded.stderr_dir, "a")
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("auth with s3cret-value failed\n", encoding="utf-8")
    kept = service.servers.logs("a")
    assert kept is not None
    assert (kept.path, kept.text) == (path, "auth with *** failed\n")


async def test_refresh_lists_real_servers_and_reports_each_one(tmp_path: Path) -> None:
    servers = {
        "sdk": {"command": sys.executable, "args": [str(SDK_SERVER), "stdio"]},
        "gone": {"command": "/nonexistent/gone"},
        "off": {"command": "/nonexistent/off", "enabled": False},
    }
    service = _service(tmp_path, servers, {})
    heard: list[str] = []
    with anyio.fail_after(60):
        results = await service.servers.refresh(
            concurrency=2, done=lambda result: heard.append(result.server_id)
        )
    assert [(r.server_id, r.ok) for r in results] == [("sdk", True), ("gone", False)]
    assert sorted(heard) == ["gone", "sdk"]
    sdk, gone = results
    assert isinstance(sdk, RefreshResult)
    assert sdk.tools > 0
    assert gone.error is not None
    assert "not available" in gone.error

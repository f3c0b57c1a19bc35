"""The service layer's tools: the profile's listing, search, inspect and call."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomli_w

from pegboard.calls import CallRecord
from pegboard.calls.approval import CallbackApprovalHandler
from pegboard.config import LoadedConfig, load_config
from pegboard.errors import ToolNotFound
from pegboard.mcp import SqliteCatalogStore, StoredServer
from pegboard.runtime import RuntimeOptions, ToolRuntime
from pegboard.service import Service

pytestmark = pytest.mark.anyio

TOOLS = (
    {
        "name": "read_file",
        "description": "Read a file from disk.",
        "inputSchema": {"type": "object"},
    },
    {"name": "send_mail", "description": "Send an e-mail.", "inputSchema": {"type": "object"}},
)


def _service(tmp_path: Path, records: list[CallRecord]) -> Service:
    path = tmp_path / "config.toml"
    config = {
        "data_dir": str(tmp_path / "data"),
        "meta": {"search": "lexical"},
        "servers": {"fs": {"command": "/nonexistent/fs"}},
    }
    path.write_text(tomli_w.dumps(config), encoding="utf-8")
    loaded = load_config(path)
    store = SqliteCatalogStore(loaded.catalog_path)
    fingerprint = loaded.config.servers["fs"].fingerprint
    store.put(StoredServer("fs", fingerprint=fingerprint, tools=TOOLS, fetched_at=1.0))
    store.close()

    def factory(loaded: LoadedConfig, options: RuntimeOptions) -> ToolRuntime:
        return ToolRuntime(loaded, RuntimeOptions(prewarm=False, defer=False, audit=records.append))

    return Service(loaded, factory=factory)


def test_entries_search_and_get_answer_from_the_profiles_listing(tmp_path: Path) -> None:
    service = _service(tmp_path, [])
    tools = service.tools
    assert [e.name for e in tools.entries()] == ["mcp__fs__read_file", "mcp__fs__send_mail"]
    assert [e.name for e in tools.entries(query="mail")] == ["mcp__fs__send_mail"]
    assert [e.name for e, _ in tools.search("read a file", limit=1)] == ["mcp__fs__read_file"]
    assert tools.get("mcp__fs__send_mail").source is not None
    assert tools.flags(tools.get("mcp__fs__send_mail")) == []
    assert tools.cached_mcp_tools() == 2
    with pytest.raises(ToolNotFound, match="mcp__fs__read_file"):
        tools.get("mcp__fs__read_fil")
    service.close()


async def test_a_call_of_an_unknown_name_is_not_found_audited_and_starts_nothing(
    tmp_path: Path,
) -> None:
    records: list[CallRecord] = []
    service = _service(tmp_path, records)
    never = CallbackApprovalHandler(lambda request: "deny")
    outcome = await service.tools.call("mcp__fs__nope", {}, never)
    service.close()
    assert (outcome.found, outcome.failed) == (False, True)
    assert "mcp__fs__" in outcome.output.as_text()
    assert [(r.via, r.tool, r.outcome) for r in records] == [
        ("cli", "mcp__fs__nope", "ToolNotFound")
    ]
    assert service.servers.statuses()[0].state == "cold"  # nothing was started

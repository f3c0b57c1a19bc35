"""Attacks on upstream prompts and resources passed through ``pegboard serve``.

1. Shadowing by name: server ids ``g`` (prompt ``x__p``) and ``g__x`` (prompt ``p``) both gave
   ``mcp__g__x__p``, so a get went to one of them. Prompt names now follow the tools'
   wire-name scheme: distinct, and each get reaches its own server.
2. A resource URI with credentials (``db://u:SECRET@host/x?api_key=...``) went into the audit
   log raw. The audit stores it redacted.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest

from pegboard.calls.audit_log import AUDIT_FILE
from tests.gateway.harness import GATEWAY_SERVERS, serve_stdio, write_config

pytestmark = pytest.mark.anyio

SECRET_URI = "db://admin:hunter2-SECRET@db.internal/x?api_key=sk-live-K123&table=users"


def _content(label: str, **extra: object) -> dict[str, object]:
    entry: dict[str, object] = {
        "command": sys.executable,
        "args": [str(GATEWAY_SERVERS / "content.py"), label],
    }
    return entry | extra


def _text(result: mcp_types.GetPromptResult) -> str:
    content = result.messages[0].content
    assert isinstance(content, mcp_types.TextContent)
    return content.text


class _Changes:
    """Resource or prompt list_changed notifications, taken one wait at a time."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    async def __call__(self, message: Any) -> None:
        kinds = (mcp_types.ResourceListChangedNotification, mcp_types.PromptListChangedNotification)
        if isinstance(message, kinds):
            self._event.set()

    async def until(self, ready: Callable[[], Awaitable[bool]]) -> None:
        """Return once ``ready()`` holds, asking again on each list_changed."""
        with anyio.fail_after(60):
            while not await ready():
                await self._event.wait()
                self._event = anyio.Event()


async def test_prompts_of_ids_g_and_g__x_never_share_a_name_and_each_get_reaches_its_server(
    tmp_path: Path,
) -> None:
    write_config(
        tmp_path,
        {
            "servers": {
                "g": _content("G", env={"CONTENT_PROMPT": "x__p"}),
                "g__x": _content("GX", env={"CONTENT_PROMPT": "p"}),
            }
        },
    )
    changes = _Changes()
    async with serve_stdio(tmp_path, notifications=changes) as client:  # type: ignore[arg-type]

        async def both() -> bool:
            return len((await client.list_prompts()).prompts) == 2

        await changes.until(both)
        names = sorted(p.name for p in (await client.list_prompts()).prompts)
        got = {name: _text(await client.get_prompt(name, {"name": "Ada"})) for name in names}

    assert len(set(names)) == 2
    assert "mcp__g__x__p" not in names  # neither may claim the ambiguous plain name
    assert sorted(got.values()) == ["Hello Ada from G", "Hello Ada from GX"]


async def test_a_resource_uri_with_credentials_is_redacted_in_the_audit(tmp_path: Path) -> None:
    write_config(
        tmp_path, {"servers": {"a": _content("A", env={"CONTENT_SECRET_URI": SECRET_URI})}}
    )
    shown = f"pegboard://a/{SECRET_URI}"

    changes = _Changes()
    async with serve_stdio(tmp_path, notifications=changes) as client:  # type: ignore[arg-type]

        async def listed() -> bool:
            return shown in [str(r.uri) for r in (await client.list_resources()).resources]

        await changes.until(listed)
        read = await client.read_resource(shown)

    audit = (tmp_path / "data" / AUDIT_FILE).read_text()
    [record] = [json.loads(line) for line in audit.splitlines()]
    assert isinstance(read.contents[0], mcp_types.TextResourceContents)
    assert read.contents[0].text == "db of A"
    for secret in ("hunter2", "SECRET", "sk-live-K123", "admin"):
        assert secret not in audit
    assert record["tool"] == "pegboard://a/db://***@db.internal/x?api_key=***&table=users"

"""Shared pieces of the built-ins' route tests: a page, a SearXNG answer, in-process CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from typer.testing import CliRunner, Result

from pegboard.cli.app import app
from tests.builtin.local_http import Reply

PEGBOARD = str(Path(sys.executable).parent / "pegboard")
PAGE = (
    b"<html><head><title>Field notes</title></head><body><article><h1>Otters</h1>"
    b"<p>Sea otters hold hands while they sleep so that they do not drift apart.</p>"
    b"</article></body></html>"
)
LOOPBACK = ["127.0.0.1/32"]


def searxng_reply(*titles: str) -> Reply:
    results = [
        {"url": f"https://{t.lower()}.example/", "title": t, "content": f"about {t}"}
        for t in titles
    ]
    body = {"query": "otters", "number_of_results": len(results), "results": results}
    return Reply(200, {"content-type": "application/json"}, json.dumps(body).encode())


class Cli:
    """``pegboard`` in this process (the network guard applies), one config file."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.config = tmp_path / "config.toml"
        self.data = tmp_path / "data"
        monkeypatch.setenv("PEGBOARD_CONFIG", str(self.config))
        monkeypatch.setenv("PEGBOARD_DATA_DIR", str(self.data))
        self.write({})

    def write(self, config: dict[str, Any]) -> None:
        self.config.write_text(tomli_w.dumps(config), encoding="utf-8")

    def __call__(self, *args: str) -> Result:
        return CliRunner().invoke(app, list(args))


def profiles(**extra: Any) -> dict[str, Any]:
    return {
        "profiles": {
            "plain": {},
            "web": {"web_search": True},
            "notes": {"knowledge_bases": ["handbook"]},
        },
        **extra,
    }

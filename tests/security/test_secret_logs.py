"""Attack surface: secrets in log lines (issue 14 item 4). Once a runtime is built from a
config, no log record, pegboard's or a library's, carries a configured secret or URL
credentials."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from pegboard.config import load_config
from pegboard.runtime import RuntimeOptions, ToolRuntime
from tests.cli.conftest import write

SECRET = "hdr-9a8b7c6d5e4f"
PASSWORD = "pw-1f2e3d4c5b"
TOKEN = "tok-5566778899aa"


def test_no_log_record_carries_a_configured_secret_or_url_credentials(
    config_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"https://bob:{PASSWORD}@127.0.0.1:9/mcp?api_key={TOKEN}"
    remote = {"url": url, "headers": {"Authorization": f"Bearer {SECRET}"}}
    write(config_path, {"servers": {"remote": remote, "local": {"command": "/nonexistent/x"}}})
    runtime = ToolRuntime(load_config(config_path), RuntimeOptions(prewarm=False))
    runtime.catalog.store.close()

    with caplog.at_level(logging.DEBUG):
        logging.getLogger("httpx").info('HTTP Request: POST %s "HTTP/1.1 200 OK"', url)
        logging.getLogger("mcp.client.streamable_http").debug("headers: %r", remote["headers"])
        logging.getLogger("pegboard.gateway").warning("server said Bearer %s", SECRET)

    text = caplog.text
    assert PASSWORD not in text
    assert TOKEN not in text
    assert SECRET not in text
    assert "https://***@127.0.0.1:9/mcp?api_key=***" in text

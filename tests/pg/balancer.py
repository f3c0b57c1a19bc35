"""HAProxy in front of gateway replicas, for tests: plain round-robin, no stickiness, retries
only on a failed connection (a replica that is gone), so no request is ever sent twice to a
replica that may have run it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

PACKAGE = "haproxy"


def require_haproxy() -> str:
    """The haproxy binary; skips without it (fails when CI=true: .ci/run installs it)."""
    found = shutil.which("haproxy") or (
        "/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None
    )
    if found:
        return found
    reason = f"HAProxy is not installed: install the Debian package {PACKAGE}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (.ci/run installs it)", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


CONFIG = """\
global
    maxconn 512
defaults
    mode http
    timeout connect 2s
    timeout client 120s
    timeout server 120s
    timeout tunnel 120s
    # A connection refused (a replica killed between calls) is retried on the next replica;
    # nothing else is retried, so a request that reached a replica is never sent again.
    retries 3
    option redispatch 1
    retry-on conn-failure
    option http-buffer-request
frontend gateway
    bind 127.0.0.1:{port}
    default_backend replicas
backend replicas
    balance roundrobin
{servers}
"""


@contextmanager
def haproxy(tmp_path: Path, backends: Sequence[int]) -> Iterator[str]:
    """HAProxy round-robin over ``backends`` (ports on 127.0.0.1); yields the MCP URL."""
    binary = require_haproxy()
    port = free_port()
    servers = "\n".join(
        f"    server r{i} 127.0.0.1:{p} check inter 300ms fall 1 rise 1"
        for i, p in enumerate(backends)
    )
    config = tmp_path / "haproxy.cfg"
    config.write_text(CONFIG.format(port=port, servers=servers))
    check = subprocess.run([binary, "-c", "-f", str(config)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    process = subprocess.Popen(
        [binary, "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("haproxy did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

"""No packet leaves this machine: connects and name lookups are guarded for every test here.

Any connect to a non-loopback address is refused before it happens and fails the test at
teardown; host names resolve only from the ``dns`` table (numeric forms are parsed locally,
as glibc would), so no DNS query is ever sent.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.builtin.local_http import LocalServer, Reply
from tests.builtin.routes import PAGE, Cli

_real_getaddrinfo = socket.getaddrinfo


class NetLog:
    def __init__(self) -> None:
        self.connects: list[str] = []  # every address a socket tried to connect to
        self.offsite: list[str] = []  # the non-loopback ones (refused)
        self.dns: dict[str, list[str]] = {"localhost": ["127.0.0.1", "::1"]}
        self.lookups: list[str] = []


@pytest.fixture(autouse=True)
def net(monkeypatch: pytest.MonkeyPatch) -> Iterator[NetLog]:
    log = NetLog()
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guard(address: Any) -> None:
        if isinstance(address, tuple):
            host = str(address[0])
            log.connects.append(host)
            if not ipaddress.ip_address(host.split("%")[0]).is_loopback:
                log.offsite.append(host)
                raise ConnectionRefusedError(f"test guard: refused connect to {host}")

    def connect(self: socket.socket, address: Any) -> None:
        guard(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        guard(address)
        return real_connect_ex(self, address)

    def getaddrinfo(
        host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        log.lookups.append(str(name))
        answer = log.dns.get(str(name).rstrip(".").lower())
        if answer is not None:
            rows = []
            for address in answer:
                family = socket.AF_INET6 if ":" in address else socket.AF_INET
                sockaddr = (address, port, 0, 0) if family == socket.AF_INET6 else (address, port)
                rows.append((family, socket.SOCK_STREAM, 6, "", sockaddr))
            return rows
        flags |= socket.AI_NUMERICHOST
        return _real_getaddrinfo(host, port, family, type, proto, flags)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    yield log
    if log.offsite:
        pytest.fail(f"a test tried to connect off this machine: {log.offsite}")


@pytest.fixture
def server() -> Iterator[LocalServer]:
    srv = LocalServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def other_server() -> Iterator[LocalServer]:
    srv = LocalServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def site(server: LocalServer) -> LocalServer:
    server.route("/page.html", Reply(200, {"content-type": "text/html"}, PAGE))
    return server


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    return Cli(tmp_path, monkeypatch)

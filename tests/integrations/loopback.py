"""Refuse every connection that is not to loopback, before it is made.

The frameworks talk to their vendors on their own (the Agents SDK exports traces unless told
not to): the integration tests run with this guard on, in-process (``conftest.py``) and in the
subprocesses that run the README's examples, so a packet for elsewhere fails the test instead.
"""

from __future__ import annotations

import socket
from typing import Any

LOOPBACK = ("127.0.0.1", "::1", "localhost")
_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> None:
    host = address[0] if isinstance(address, tuple) else address
    inet = self.family in (socket.AF_INET, socket.AF_INET6)
    if inet and isinstance(host, str) and host not in LOOPBACK:
        raise OSError(f"test guard: refused a connection to {host}")
    _connect(self, address)


def only_loopback() -> None:
    socket.socket.connect = _loopback_only  # type: ignore[method-assign]


def restore() -> None:
    socket.socket.connect = _connect  # type: ignore[method-assign]

import re
import socket

import pytest


def test_the_guard_refuses_a_connection_elsewhere_before_it_is_made() -> None:
    message = "test guard: refused a connection to 192.0.2.1"
    with socket.socket() as sock, pytest.raises(OSError, match=f"^{re.escape(message)}$"):
        sock.connect(("192.0.2.1", 80))

"""Drive a command on a real pseudo-terminal (stdin, stdout and stderr are the pty's slave),
so code that checks ``isatty()`` and prompts the user runs as it does for a person."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from collections.abc import Mapping, Sequence

WAIT = 60.0  # bound on every wait; a test that hits it fails, it never hangs
CONTROLLING_TTY = "import fcntl, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0)"
"""Python code a child runs first to make the pty on its stdin its controlling terminal."""


class PseudoTerminal:
    def __init__(
        self, argv: Sequence[str], *, env: Mapping[str, str], stdin: int | None = None
    ) -> None:
        """``stdin``: a file descriptor for the child's stdin instead of the terminal."""
        self._argv = list(argv)
        self._stdin = stdin
        self._env = dict(env) | {"TERM": "dumb", "COLUMNS": "100", "NO_COLOR": "1"}
        self.seen = ""
        self.returncode: int | None = None

    def __enter__(self) -> PseudoTerminal:
        self._master, slave = pty.openpty()
        # A session of its own whose controlling terminal is the pty (the child takes it,
        # see CONTROLLING_TTY), so Ctrl-C typed on it is a SIGINT, as in a real terminal.
        self._process = subprocess.Popen(
            self._argv,
            stdin=slave if self._stdin is None else self._stdin,
            stdout=slave,
            stderr=slave,
            env=self._env,
            close_fds=True,
            start_new_session=True,
        )
        os.close(slave)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self.returncode = self._process.wait(timeout=WAIT)
        os.close(self._master)

    def expect(self, text: str, times: int = 1) -> str:
        """Read until ``text`` has appeared (``times`` times); return everything read so far."""
        deadline = time.monotonic() + WAIT
        while self.seen.count(text) < times:
            if not self._read(deadline):
                raise AssertionError(f"{text!r} never appeared; the terminal showed:\n{self.seen}")
        return self.seen

    def signal(self, signum: int) -> None:
        self._process.send_signal(signum)

    def send(self, text: str) -> None:
        os.write(self._master, text.encode())

    def read_to_end(self) -> str:
        """Read until the command closes the terminal; return what came after the last send."""
        start = len(self.seen)
        deadline = time.monotonic() + WAIT
        while self._read(deadline):
            pass
        self.returncode = self._process.wait(timeout=WAIT)
        return self.seen[start:]

    def _read(self, deadline: float) -> bool:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        ready, _, _ = select.select([self._master], [], [], remaining)
        if not ready:
            return False
        try:
            chunk = os.read(self._master, 4096)
        except OSError:  # EIO: the child closed its side
            return False
        if not chunk:
            return False
        self.seen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")
        return True

"""The tool definitions that passed the listing checks, kept so a known one is not checked again.

:func:`pegboard.mcp.listing.tool_problem` validates each listed definition against the SDK's
models and its schemas against their draft's metaschema: about 0.3 ms a tool, seconds for a
5,000-tool server, paid again whenever a server is re-listed (every start, every
``list_changed``). :class:`CheckedDefinitions` remembers a 16-byte digest of each definition
that passed (its JSON as the server sent it, with the protocol version it was checked for);
the listing filter checks only the definitions whose digest it has not seen. Only passes are
remembered: a refused definition is checked (and refused) every time it is listed.

The digests are kept in the data directory (``checked-definitions.bin``, written by the same
code as the token counts: :mod:`pegboard.deferral.kept_counts`), under a head line naming
pegboard's version, the SDK's and :data:`CHECKS_VERSION`, so an upgrade, or a change of the
checks, starts from nothing.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

from pegboard._release import release

# Bump when tool_problem's checks change what passes.
CHECKS_VERSION = 1


class CheckedDefinitions:
    """Digests of the tool definitions that passed the listing checks (thread-safe)."""

    def __init__(self) -> None:
        self._passed: set[bytes] = set()
        self._lock = threading.Lock()
        # Called after a new pass was added (the kept file is then written a moment later).
        self.on_new: Callable[[], None] | None = None

    @property
    def kept_head(self) -> bytes:
        """The first line of the kept file: what a digest's pass depends on."""
        return _head()

    def passed(self, digest: bytes) -> bool:
        with self._lock:
            return digest in self._passed

    def add(self, digest: bytes) -> None:
        with self._lock:
            if digest in self._passed:
                return
            self._passed.add(digest)
        if self.on_new is not None:
            self.on_new()

    def seed(self, counts: Iterable[tuple[bytes, int]]) -> None:
        """Add passes read back from the kept file (:meth:`counts` records)."""
        with self._lock:
            self._passed.update(digest for digest, _ in counts)

    def counts(self) -> list[tuple[bytes, int]]:
        """The passes as kept-file records (digest, 1)."""
        with self._lock:
            return [(digest, 1) for digest in self._passed]

    def __len__(self) -> int:
        with self._lock:
            return len(self._passed)


def definition_digest(raw: Any, protocol_version: str) -> bytes | None:
    """The digest of ``raw`` as checked for ``protocol_version``; None when it is not JSON.

    The JSON keeps the server's key order: the same server lists a tool the same way each
    time, and a reordered one is merely checked again.
    """
    try:
        text = json.dumps(raw, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None
    digest = hashlib.blake2b(protocol_version.encode(), digest_size=16)
    digest.update(b"\0")
    digest.update(text.encode())
    return digest.digest()


_default = CheckedDefinitions()


def default_checked() -> CheckedDefinitions:
    """The process's table of passes, shared by every connection (seeded by the runtime)."""
    return _default


@cache
def _head() -> bytes:
    versions = [release(package) for package in ("pegboard", "mcp", "mcp-types")]
    return f"pegboard-checked-definitions {CHECKS_VERSION} {' '.join(versions)}\n".encode()

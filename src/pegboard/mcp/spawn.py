"""Starting stdio servers: the one place a child process is spawned, and the early start.

A stdio server's launch is :class:`Launch` (argv, cwd, the environment its config sets);
:meth:`Launch.start` spawns it with pipes, in its own session, with only the allow-listed
part of pegboard's environment. ``pegboard serve`` on stdio spends about half a second
importing pegboard and the MCP SDK before its supervisor opens the first connection, and a
server needs its own start-up time after that. So :func:`prestart` (called by
:mod:`pegboard.gateway.early` from the ready snapshot's ``spawn`` plan, before anything heavy
is imported) starts those servers at once, and the transport :func:`claim` s the running
process when it opens the connection, if the launch is still exactly the same (argv, cwd and
environment); otherwise the early process is stopped and a fresh one started. Whatever is
not claimed is stopped by :func:`discard` (the supervisor calls it when it starts) and at
exit.

The plan in the snapshot holds argv and cwd only: the environment is read from the config
file itself (:func:`plan_launches`), so no configured secret is copied into the snapshot.
This module is stdlib only: :mod:`pegboard.gateway.early` imports it before pydantic.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import tomllib
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

#: Variables a child inherits from pegboard's environment; everything else must be configured.
ENV_ALLOWLIST = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")


def child_environment(configured: Mapping[str, str]) -> dict[str, str]:
    base = {k: v for k in ENV_ALLOWLIST if (v := os.environ.get(k)) and not v.startswith("()")}
    return base | dict(configured)


@dataclass(frozen=True, slots=True)
class Launch:
    """How one stdio server is started: ``argv``, ``cwd`` and the variables its config sets."""

    server_id: str
    argv: tuple[str, ...]
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)

    def start(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_environment(self.env),
            cwd=self.cwd,
            start_new_session=True,
        )

    def same(self, other: Launch) -> bool:
        return (self.argv, self.cwd, dict(self.env)) == (other.argv, other.cwd, dict(other.env))

    def plan(self) -> dict[str, Any]:
        """The snapshot's entry: no environment (see the module docstring)."""
        return {"server": self.server_id, "argv": list(self.argv), "cwd": self.cwd}


_early: dict[str, tuple[Launch, subprocess.Popen[bytes]]] = {}


def plan_launches(plan: Any, config_bytes: bytes) -> list[Launch]:
    """The launches of a snapshot's ``spawn`` plan, each with the environment of its
    ``[servers.<id>]`` table in the config file; entries that do not fit are left out (the
    transport then starts that server itself, as on a first start)."""
    if not isinstance(plan, list) or not plan:
        return []
    try:
        servers = tomllib.loads(config_bytes.decode()).get("servers")
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    launches = []
    for item in plan:
        if isinstance(item, dict) and isinstance(servers, dict):
            launch = _launch(item, servers.get(item.get("server")))
            if launch is not None:
                launches.append(launch)
    return launches


def _launch(item: dict[str, Any], table: Any) -> Launch | None:
    server_id, argv, cwd = item.get("server"), item.get("argv"), item.get("cwd")
    env = table.get("env", {}) if isinstance(table, dict) else None
    if not isinstance(server_id, str) or not isinstance(env, dict) or not isinstance(argv, list):
        return None
    if not argv or not all(isinstance(a, str) for a in argv):
        return None
    if not (cwd is None or isinstance(cwd, str)):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        return None
    return Launch(server_id, tuple(argv), cwd, env)


def prestart(launches: list[Launch]) -> None:
    """Start ``launches`` now, to be claimed by the transport (never raises: a launch that
    cannot start is left to the transport, which says why)."""
    for launch in launches:
        if launch.server_id in _early:
            continue
        try:
            _early[launch.server_id] = (launch, launch.start())
        except OSError:
            continue
    if _early:
        atexit.register(discard)


def claim(launch: Launch) -> subprocess.Popen[bytes] | None:
    """The process started early for ``launch``'s server, if its launch is the same (the
    caller owns it now); a different launch's early process is stopped."""
    found = _early.pop(launch.server_id, None)
    if found is None:
        return None
    early, process = found
    if early.same(launch) and process.poll() is None:
        return process
    _stop(process)
    return None


def waiting() -> dict[str, int]:
    """server id -> pid of each process started early and not claimed yet."""
    return {server_id: process.pid for server_id, (_, process) in _early.items()}


def discard(keep: frozenset[str] = frozenset()) -> None:
    """Stop every early process not claimed, except those of the servers in ``keep``."""
    for server_id in [s for s in _early if s not in keep]:
        _stop(_early.pop(server_id)[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=1.0)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

"""The answers a stdio client needs first, served from a snapshot before anything heavy loads.

A client that starts ``pegboard serve`` sends ``initialize``, ``notifications/initialized``
and ``tools/list`` and waits for each answer. Importing the MCP SDK alone takes longer than
a stdlib process needs to answer all three, so ``pegboard serve`` (stdio) writes what it
answers them with to a *ready snapshot* in the data directory, keyed by its command line and
config file, whenever that changes; the next start with the same command line and config
answers from it at once (see :mod:`pegboard.gateway.early`). This module is stdlib only:
importing it must not import pydantic, the SDK or the rest of pegboard.

A modern (2026-07-28) client sends no handshake: its first request is ``server/discover``
and every request carries its protocol version in ``_meta``; it is answered from the same
snapshot, so its first answer comes as early as a handshake client's.

A snapshot is JSON: ``versions`` (the handshake protocol versions the server accepts, oldest
first), ``init`` (the ``initialize`` result without ``protocolVersion``), ``tools``
(protocol version, of either era -> the ``tools/list`` result for that version), ``modern``
(the modern versions), ``discover`` (modern version -> the ``server/discover`` result),
``spawn`` (the stdio servers to start at once: :mod:`pegboard.mcp.spawn`) and, once the search
index was loaded, ``search`` (what answers a plain ``tool_search``:
:mod:`pegboard.gateway.early_search`, imported only when such a call comes).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

FORMAT = 2
# The envelope keys of a 2026-07-28 request's ``_meta`` (mcp_types' constants; not imported).
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CONFIG_ENV = "PEGBOARD_CONFIG"  # the same names as pegboard.config.load (not imported: pydantic)
DATA_DIR_ENV = "PEGBOARD_DATA_DIR"
_GLOBAL_VALUE_OPTIONS = ("--config", "-c")


def _serve_args(argv: list[str]) -> tuple[str | None, list[str]] | None:
    """``(config option, serve's own args)`` for ``[--config X] serve ARGS`` over stdio;
    None for any other command line (another command, ``--http``, ``--help``)."""
    config: str | None = None
    i = 0
    while i < len(argv) and argv[i] != "serve":
        arg = argv[i]
        if arg in _GLOBAL_VALUE_OPTIONS and i + 1 < len(argv):
            config, i = argv[i + 1], i + 2
        elif arg.startswith("--config="):
            config, i = arg.partition("=")[2], i + 1
        else:
            return None
    rest = argv[i + 1 :]
    if i >= len(argv) or any(a in ("--http", "--help") or a.startswith("--host") for a in rest):
        return None
    return config, rest


def _default_dir(kind: str) -> Path:
    import platformdirs  # small; only when no environment variable names the directory

    if kind == "config":
        return Path(platformdirs.user_config_dir("pegboard", appauthor=False))
    return Path(platformdirs.user_data_dir("pegboard", appauthor=False))


def _config_file(explicit: str | None) -> Path:
    named = explicit or os.environ.get(CONFIG_ENV)
    return Path(named).expanduser() if named else _default_dir("config") / "config.toml"


def read_config(argv: list[str]) -> bytes:
    """The bytes of the config file ``pegboard ARGV`` (a stdio serve) reads; empty if none."""
    parsed = _serve_args(argv)
    try:
        return _config_file(parsed[0] if parsed else None).read_bytes()
    except OSError:
        return b""


def snapshot_path(argv: list[str]) -> Path | None:
    """Where the snapshot of ``pegboard ARGV`` lives, or None if it is not a stdio serve.

    The key covers the command line, the config file's path and bytes and the data
    directory, so any edit of the config starts from a fresh snapshot; a change of the
    upstream servers' tools is corrected by ``notifications/tools/list_changed`` once the
    full server runs.
    """
    parsed = _serve_args(argv)
    if parsed is None:
        return None
    explicit, rest = parsed
    config = _config_file(explicit)
    config_bytes = read_config(argv)
    data = os.environ.get(DATA_DIR_ENV)
    data_dir = Path(data).expanduser() if data else _default_dir("data")
    from pegboard import __version__

    key = (
        json.dumps(
            [FORMAT, __version__, rest, str(config.absolute()), str(data_dir), os.getcwd()]
        ).encode()
        + hashlib.sha256(config_bytes).digest()
    )
    return data_dir / "ready" / f"{hashlib.sha256(key).hexdigest()[:32]}.json"


def read_snapshot(path: Path) -> dict[str, Any] | None:
    """The snapshot at ``path``, or None if there is none or it is unusable (not JSON, or of
    the wrong shape: ``versions: []``, ``init: []``...), which is said on stderr: the start
    then proceeds without it, as a first start does."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        problem: str | None = "it is not JSON"
    else:
        problem = snapshot_problem(data)
    if problem is not None:
        print(f"pegboard: ignoring the ready snapshot {path}: {problem}", file=sys.stderr)
        return None
    result: dict[str, Any] = data
    return result


def snapshot_problem(data: Any) -> str | None:
    """What makes ``data`` no usable snapshot (None: usable)."""
    if not isinstance(data, dict):
        return "it is not a JSON object"
    versions, init, tools = data.get("versions"), data.get("init"), data.get("tools")
    if not isinstance(versions, list) or not versions:
        return "'versions' is not a non-empty list"
    if not all(isinstance(v, str) for v in versions):
        return "'versions' holds a value that is not a string"
    if not isinstance(init, dict) or "protocolVersion" in init:
        return "'init' is not an initialize result"
    if not isinstance(tools, dict):
        return "'tools' is not an object"
    for version, listed in tools.items():
        if not isinstance(listed, dict) or not isinstance(listed.get("tools"), list):
            return f"'tools' of version {version!r} is not a tools/list result"
    return None


def write_snapshot(path: Path, snapshot: dict[str, Any]) -> None:
    """Write atomically (a concurrent start reads the old or the new file, never half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    # Owner-only: the spawn plan holds the servers' command lines (arguments may carry tokens).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(json.dumps(snapshot, separators=(",", ":")).encode())
    tmp.replace(path)


def response(request_id: Any, result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n"


def error_response(request_id: Any, code: int, message: str) -> bytes:
    error = {"code": code, "message": message}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode() + b"\n"


class ReadyAnswers:
    """Answers ``initialize``, ``ping`` and ``tools/list`` of one stdio client from a snapshot,
    and a modern client's ``server/discover`` and ``tools/list``.

    Remembers the protocol version it negotiated, for ``tools/list`` and for the full server.
    """

    def __init__(self, snapshot: dict[str, Any]) -> None:
        self.snapshot = snapshot
        self.version: str | None = None  # negotiated by a handshake
        self.listed: Any = None  # the tools/list result the client got, if any
        self.listed_version: str | None = None  # ... and the version it was listed for
        self.client: str | None = None  # the initialize's clientInfo name
        # tool_search calls answered here: (request id, arguments, arrived (Unix s), seconds)
        self.searched: list[tuple[int | str, Any, float, float]] = []
        self._search: Any = None  # the EarlySearch of the snapshot's section, made on use

    def answer(self, message: dict[str, Any]) -> bytes | None:
        """The response line for ``message``, or None if the full server must answer it."""
        method, request_id, params = message.get("method"), message.get("id"), message.get("params")
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            return None
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta:
            return self._modern(method, request_id, params, meta)
        if method == "ping":
            return response(request_id, {})
        if method == "initialize" and self.version is None and isinstance(params, dict):
            versions = self.snapshot["versions"]
            asked = params.get("protocolVersion")
            self.version = asked if asked in versions else versions[-1]
            info = params.get("clientInfo")
            name = info.get("name") if isinstance(info, dict) else None
            self.client = name if isinstance(name, str) else None
            return response(request_id, {"protocolVersion": self.version, **self.snapshot["init"]})
        plain = params is None or (isinstance(params, dict) and not params.get("cursor"))
        if method == "tools/list" and self.version is not None and plain:
            return self._list(request_id, self.version)
        if method == "tools/call" and self.version is not None and isinstance(params, dict):
            return self._searched(request_id, self.version, params)
        return None

    def _searched(
        self, request_id: int | str, version: str, params: dict[str, Any]
    ) -> bytes | None:
        """A plain ``tool_search`` answered from the snapshot's ``search`` section
        (:mod:`pegboard.gateway.early_search`), remembered for the full server's audit."""
        section = self.snapshot.get("search")
        if params.get("name") != "tool_search" or "_meta" in params or not section:
            return None
        arrived, started = time.time(), time.perf_counter()
        if self._search is None:
            from pegboard.gateway.early_search import EarlySearch

            self._search = EarlySearch(section)
        arguments = params.get("arguments")
        line: bytes | None = self._search.answer(request_id, version, arguments)
        if line is not None:
            self.searched.append((request_id, arguments, arrived, time.perf_counter() - started))
        return line

    def _list(self, request_id: int | str, version: str) -> bytes | None:
        listed = self.snapshot["tools"].get(version)
        if listed is None:
            return None
        self.listed, self.listed_version = listed, version
        return response(request_id, listed)

    def _modern(
        self, method: Any, request_id: int | str, params: Any, meta: dict[str, Any]
    ) -> bytes | None:
        """A 2026-07-28 request (its envelope complete): ``server/discover``, ``tools/list``."""
        version = meta[PROTOCOL_VERSION_KEY]
        modern = self.snapshot.get("modern")
        known = isinstance(version, str) and isinstance(modern, list) and version in modern
        if self.version is not None or not known or CLIENT_CAPABILITIES_KEY not in meta:
            return None  # a handshake client's, an unknown version's, or a half envelope
        if method == "server/discover":
            discover = self.snapshot.get("discover")
            found = discover.get(version) if isinstance(discover, dict) else None
            return None if found is None else response(request_id, found)
        if method == "tools/list" and not params.get("cursor"):
            return self._list(request_id, version)
        return None

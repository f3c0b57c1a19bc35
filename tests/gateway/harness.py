"""Running ``pegboard serve`` as a subprocess and talking to it with the official SDK client."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types
import pytest
import tomli_w
from anyio.abc import Process
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext

ROOT = Path(__file__).resolve().parents[2]
PEGBOARD = str(Path(sys.executable).parent / "pegboard")
MCP_SERVERS = ROOT / "tests" / "mcp" / "servers"
GATEWAY_SERVERS = Path(__file__).resolve().parent / "servers"
REFSERVERS = ROOT / ".refservers"


# Bounds for a loaded 2-core CI machine; a gateway that waited on the hanging server (whose
# connect timeout is set to 120 s below) could never meet them.
STARTUP_BOUND = 45


def read_audit(
    path: Path, until: Callable[[list[dict[str, Any]]], bool] = bool, timeout: float = 10
) -> list[dict[str, Any]]:
    """A gateway's audit file as records, once ``until`` holds for them (``timeout`` s at most):
    the file sink writes in batches off the loop, so the last answer's record may land just
    after the answer."""
    deadline = time.monotonic() + timeout
    records: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        if path.exists():
            records = [json.loads(line) for line in path.read_text().splitlines()]
            if until(records):
                break
        time.sleep(0.05)
    return records


def process_gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def require_installed(paths: list[Path]) -> None:
    """Skip the calling module when reference servers are missing because a registry was
    unreachable (``.ci/run`` leaves a marker); elsewhere in CI a missing install is a failure."""
    missing = [p.name for p in paths if not p.exists()]
    if not missing:
        return
    markers = sorted(REFSERVERS.glob("UNAVAILABLE-*"))
    reason = "; ".join(m.read_text(encoding="utf-8").strip() for m in markers)
    if os.environ.get("CI"):  # in CI a missing component fails, whatever the cause
        pytest.fail(
            f"{', '.join(missing)} missing although .ci/run installs them"
            + (f" ({reason})" if reason else ""),
            pytrace=False,
        )
    if markers:
        pytest.skip(f"{', '.join(missing)} not installed: {reason}", allow_module_level=True)
    pytest.skip(
        f"real-server tests: {', '.join(missing)} not installed; enable them with "
        "`scripts/install_refservers.sh` (python3 and npm, into .refservers/)",
        allow_module_level=True,
    )


def sdk_server(*args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(MCP_SERVERS / "sdk_server.py"), "stdio", *args]}


def scripted_server(*args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(MCP_SERVERS / "scripted.py"), *args]}


def victim_server(*args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(GATEWAY_SERVERS / "victim.py"), *args]}


def write_config(tmp_path: Path, config: Mapping[str, Any]) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(tomli_w.dumps(dict(config)), encoding="utf-8")
    return path


def gateway_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env["PEGBOARD_DATA_DIR"] = str(tmp_path / "data")
    env["PEGBOARD_CONFIG"] = str(tmp_path / "config.toml")
    return env


class Notifications:
    """Collects ``notifications/tools/list_changed`` so a test can wait for the next one."""

    def __init__(self) -> None:
        self.count = 0
        self._event = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self.count += 1
            self._event.set()

    async def wait(self) -> None:
        await self._event.wait()
        self._event = anyio.Event()


@asynccontextmanager
async def serve_stdio(
    tmp_path: Path,
    *serve_args: str,
    notifications: Notifications | None = None,
    elicitation: Callable[..., Any] | None = None,
    mode: str = "legacy",
) -> AsyncIterator[Client]:
    """An SDK client of ``pegboard serve`` on stdio; ``mode`` as the SDK's ``Client`` takes
    it (``legacy``: the handshake era every older test was written for; ``auto``, or
    ``"2026-07-28"``: the modern era, whose list changes come through ``listen``)."""
    params = StdioServerParameters(
        command=PEGBOARD, args=["serve", *serve_args], env=gateway_env(tmp_path)
    )
    async with Client(
        stdio_client(params),
        message_handler=notifications,
        elicitation_callback=elicitation,
        mode=mode,
    ) as client:
        yield client


def scripted_elicitation(answers: list[str], asked: list[str]) -> Callable[..., Any]:
    """An elicitation callback that notes each form's message in ``asked`` and answers the
    next of ``answers`` (an approval decision: allow_once, allow_session, deny); a URL-mode
    elicitation (the admin page, offered beside the form) is dismissed, as by a user who
    answers the form."""

    async def elicit(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        if isinstance(params, mcp_types.ElicitRequestURLParams):
            return mcp_types.ElicitResult(action="cancel")
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"decision": answers.pop(0)})

    return elicit


async def wait_for_tools(client: Client, changes: Notifications, *names: str) -> list[str]:
    """The listed tool names once every one of ``names`` is listed (waits on list_changed)."""
    return await wait_for_list(client, changes, lambda listed: all(n in listed for n in names))


async def wait_for_list(
    client: Client, changes: Notifications, ready: Callable[[list[str]], bool]
) -> list[str]:
    """The listed tool names once ``ready(names)`` holds, re-listing on each list_changed."""
    while True:
        listed = [t.name for t in (await client.list_tools()).tools]
        if ready(listed):
            return listed
        await changes.wait()


def text_of(result: mcp_types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))


async def run_cli(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = await anyio.run_process([PEGBOARD, *args], env=gateway_env(tmp_path), check=False)
    return result.returncode, result.stdout.decode(), result.stderr.decode()


INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "0"},
}


class Lines:
    """Line-delimited JSON-RPC over a process's pipes, for tests that own the process: every
    line the gateway writes, in order; the answers (responses) kept as they come."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self._stdin, self._stdout = process.stdin, process.stdout
        self._buffer = b""
        self.answers: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any] | bytes) -> None:
        """A message (``jsonrpc`` added when missing), or bytes written as they are."""
        data = message if isinstance(message, bytes) else json.dumps(_rpc(message)).encode()
        await self._stdin.send(data + b"\n")

    async def raw(self) -> bytes:
        """The next line, as written (without its newline)."""
        while b"\n" not in self._buffer:
            self._buffer += await self._stdout.receive()
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    async def next(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(await self.raw())
        return message

    async def answer_line(self, request_id: int) -> bytes:
        """The line of the answer to ``request_id``, as written; lines before it are read
        (answers among them kept in ``answers``)."""
        while True:
            line = await self.raw()
            message: dict[str, Any] = json.loads(line)
            if "id" in message and "method" not in message:
                self.answers.append(message)
                if message["id"] == request_id:
                    return line

    async def answer(self, request_id: int) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(await self.answer_line(request_id))
        return message

    async def start(self, init: Mapping[str, Any] = INIT) -> None:
        """Initialize (id 1), say initialized, list the tools (id 2)."""
        await self.send({"id": 1, "method": "initialize", "params": dict(init)})
        await self.answer(1)
        await self.send({"method": "notifications/initialized"})
        await self.send({"id": 2, "method": "tools/list"})
        await self.answer(2)


def _rpc(message: dict[str, Any]) -> dict[str, Any]:
    return message if "jsonrpc" in message else {"jsonrpc": "2.0", **message}


class RawRpc(Lines):
    """:class:`Lines` numbering its own requests."""

    def __init__(self, process: Process) -> None:
        super().__init__(process)
        self._next_id = 0

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.answer(self._next_id)

    async def initialize(self) -> dict[str, Any]:
        info = {"name": "raw-test", "version": "0"}
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info}
        answer = await self.request("initialize", params)
        await self.send({"method": "notifications/initialized"})
        return answer


SERVING = "pegboard serving MCP on "


async def serving_url(process: anyio.abc.Process) -> str:
    """The URL of ``pegboard serve --http``'s "pegboard serving MCP on ..." line (stderr)."""
    from anyio.streams.text import TextReceiveStream

    assert process.stderr is not None
    text = ""
    async for chunk in TextReceiveStream(process.stderr):
        text += chunk
        for line in text.splitlines():
            if line.startswith(SERVING) and text.endswith("\n"):
                return line.removeprefix(SERVING).split()[0]
    raise AssertionError(f"pegboard serve --http did not start: {text}")

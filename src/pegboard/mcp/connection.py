"""One long-lived MCP session per server, opened on demand and supervised.

The session lives in a task of the catalog's task group (anyio scopes must be entered and left
in one task); callers from any task borrow it. Connecting is single-flight and bounded by
``connect_timeout``; every request has its own deadline. When the server crashes or the
connection closes, the session is dropped and the catalog is told (``on_lost``) so it can
restart the server with backoff; a call that finds the server down reconnects, waiting out the
current backoff when it is shorter than the connect timeout.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import time
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

import anyio
import anyio.abc

from pegboard.errors import ServerUnavailable, ToolExecutionError
from pegboard.mcp.config import McpServerConfig
from pegboard.mcp.transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    StderrLog,
    TransportState,
    open_transport,
)

# The SDK loads when a session opens (``_run``) or a request goes out, never when the catalog
# builds its connections: read commands (`pegboard tools list`) serve the cache without it.
if TYPE_CHECKING:
    import mcp_types
    from mcp import ClientSession
    from mcp.shared.exceptions import MCPError
    from pydantic import TypeAdapter, ValidationError

    from pegboard.mcp.direct import DirectRequests
    from pegboard.mcp.listing import ListingLog

logger = logging.getLogger("pegboard.mcp.connection")

MAX_PAGES = 1000
RESTART_BACKOFF = (0.0, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)


class McpConnection:
    """The session to one server (see the module docstring)."""

    def __init__(
        self,
        config: McpServerConfig,
        task_group: Callable[[], anyio.abc.TaskGroup],
        *,
        on_tools_list_changed: Callable[[], None] = lambda: None,
        on_content_changed: Callable[[], None] = lambda: None,
        on_lost: Callable[[str], None] = lambda reason: None,
        on_connected: Callable[[], None] = lambda: None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        stderr_log: StderrLog | None = None,
    ) -> None:
        self.config = config
        self.stderr = stderr_log or StderrLog()
        self._task_group = task_group
        self._on_tools_list_changed = on_tools_list_changed
        self._on_content_changed = on_content_changed
        self._on_lost = on_lost
        self._on_connected = on_connected
        self._done: anyio.Event | None = None
        self._max_message_bytes = max_message_bytes
        self._lock = anyio.Lock()
        self._session: ClientSession | None = None
        self._state: TransportState | None = None
        self._listing: ListingLog | None = None
        self._listings = 0  # list_tools calls under way
        self._closing = False
        self.failures = 0
        self.retry_at = 0.0
        # Set by the catalog: True while no tools are cached (the start may install the server).
        self.first_start: Callable[[], bool] = lambda: False

    @property
    def server_id(self) -> str:
        return self.config.id

    @property
    def connected(self) -> bool:
        return self._session is not None

    # -- lifecycle ----------------------------------------------------------------------------
    async def session(self) -> ClientSession:
        """The live session, connecting first if needed (single-flight)."""
        live, state = self._session, self._state
        if live is not None and state is not None and not state.closed.is_set():
            return live  # the common case: no lock (nothing awaited between check and use)
        async with self._lock:
            state, done = self._state, self._done
            if self._session is not None and state is not None and not state.closed.is_set():
                return self._session
            if done is not None and not done.is_set():
                with anyio.move_on_after(self.config.connect_timeout):
                    await done.wait()  # the old session is still winding down
            wait = self.retry_at - time.monotonic()
            if wait > self.config.connect_timeout:
                raise ServerUnavailable(
                    self.server_id, f"retrying in {wait:.0f}s after {self.failures} failures"
                )
            if wait > 0:
                await anyio.sleep(wait)
            self._closing = False
            state = TransportState()
            self._done = anyio.Event()
            try:
                await self._task_group().start(self._run, state, self._done)
            except Exception as exc:
                self._note_failure()
                reason = _reason(exc, self.stderr, state.reason)
                raise ServerUnavailable(self.server_id, reason) from exc
            assert self._session is not None
            self._on_connected()
            return self._session

    async def _run(
        self,
        state: TransportState,
        done: anyio.Event,
        *,
        task_status: anyio.abc.TaskStatus[None],
    ) -> None:
        from mcp import ClientSession
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        from pegboard.mcp.listing import ListingLog, filter_tool_listings

        started = False
        first = self.first_start()
        timeout = self.config.first_connect_timeout if first else self.config.connect_timeout
        setting = "first_connect_timeout" if first else "connect_timeout"
        self.stderr.start()
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
                async with AsyncExitStack() as stack:
                    streams = await stack.enter_async_context(
                        open_transport(
                            self.config,
                            state,
                            stderr_log=self.stderr,
                            max_message_bytes=self._max_message_bytes,
                        )
                    )
                    self._listing = listing = ListingLog()
                    read, write = filter_tool_listings(streams, listing)
                    session = ClientSession(read, write, message_handler=self._on_message)
                    await stack.enter_async_context(session)
                    await _negotiate(session, self.config.protocol)
                    version = session.protocol_version or listing.protocol_version
                    listing.protocol_version = version
                    if version in MODERN_PROTOCOL_VERSIONS:
                        # no list_changed notifications on this era: listen for them
                        listening = await stack.enter_async_context(anyio.create_task_group())
                        stack.callback(listening.cancel_scope.cancel)  # first on the way out
                        listening.start_soon(self._listen, session)
                    scope.deadline = math.inf
                    self._session, self._state = session, state
                    started = True
                    task_status.started()
                    if self._closing:  # close() arrived while we were connecting
                        state.close("closed by pegboard")
                    await state.closed.wait()
            if scope.cancelled_caught and not started:
                if first:  # never silently: a half-finished install breaks every later start
                    logger.warning(
                        "MCP server %s: its first start did not finish within %gs; stopping it "
                        "(an `npx -y`/`uvx` install may have been cut short). Raise "
                        "first_connect_timeout in [servers.%s]; see `pegboard servers logs %s`",
                        self.server_id,
                        timeout,
                        self.server_id,
                        self.server_id,
                    )
                raise TimeoutError(
                    f"no answer to initialize within {timeout:g}s (raise {setting} in "
                    f"[servers.{self.server_id}])"
                )
        except anyio.get_cancelled_exc_class():
            if first and not started:
                logger.warning(
                    "MCP server %s: stopped during its first start (pegboard is stopping); an "
                    "`npx -y`/`uvx` install may be unfinished (see `pegboard servers logs %s`)",
                    self.server_id,
                    self.server_id,
                )
            raise
        except Exception as exc:
            if not started:
                raise
            logger.warning("MCP server %s: session ended with an error: %r", self.server_id, exc)
        finally:
            if self._state is state:  # a newer session may already have replaced this one
                self._session = self._state = None
            done.set()
            if started and not self._closing:
                reason = state.reason or "connection closed"
                self._note_failure()
                self._on_lost(reason)

    async def _listen(self, session: ClientSession) -> None:
        """A 2026-07-28 server's list changes, through ``subscriptions/listen``, until the
        session ends; a server that does not serve listen just never announces changes."""
        from mcp.client.subscriptions import ToolsListChanged, listen

        try:
            async with listen(
                session,
                tools_list_changed=True,
                prompts_list_changed=True,
                resources_list_changed=True,
            ) as subscription:
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        self._on_tools_list_changed()
                    else:
                        self._on_content_changed()
        except Exception as exc:
            logger.info("MCP server %s: not listening for list changes (%r)", self.server_id, exc)

    async def _on_message(self, message: Any) -> None:
        import mcp_types

        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._on_tools_list_changed()
        elif isinstance(
            message,
            mcp_types.ResourceListChangedNotification | mcp_types.PromptListChangedNotification,
        ):
            self._on_content_changed()

    def _note_failure(self) -> None:
        delay = RESTART_BACKOFF[min(self.failures, len(RESTART_BACKOFF) - 1)]
        self.failures += 1
        self.retry_at = time.monotonic() + delay

    async def close(self) -> None:
        """Close the session (the process is stopped); the next request reconnects."""
        self._closing = True
        if self._state is not None:
            self._state.close("closed by pegboard")
            done = self._done
            if done is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                    await done.wait()
        self.failures = 0
        self.retry_at = 0.0

    # -- requests -----------------------------------------------------------------------------
    async def list_tools(self) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
        """Every tool over all pages, as raw dicts, plus the tools skipped as invalid.

        A server without the tools capability gives ``[]`` without calling ``tools/list``.
        """
        import mcp_types
        from mcp.shared.exceptions import MCPError

        session = await self.session()
        state, listing = self._state, self._listing
        caps = session.server_capabilities
        if caps is None or caps.tools is None:
            return [], []
        assert listing is not None  # set by _run before the session is published
        listing.skipped.clear()
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        self._listings += 1
        try:
            with anyio.fail_after(self.config.list_timeout):
                for _ in range(MAX_PAGES):
                    params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
                    result = await session.list_tools(params=params)
                    tools.extend(
                        t.model_dump(by_alias=True, mode="json", exclude_none=True)
                        for t in result.tools
                    )
                    cursor = result.next_cursor
                    if not cursor:
                        break
                else:
                    raise ServerUnavailable(
                        self.server_id, f"tools/list ran over {MAX_PAGES} pages"
                    )
        except TimeoutError as exc:
            raise ServerUnavailable(
                self.server_id, f"tools/list timed out after {self.config.list_timeout:g}s"
            ) from exc
        except MCPError as exc:
            raise self._request_failed("tools/list", exc, state) from exc
        finally:
            self._listings -= 1
            if not self._listings:  # no other listing's page still on its way to the session
                listing.release()
        self.failures = 0
        return tools, list(listing.skipped)

    async def tools_as_sent(self) -> SentListing | None:
        """The server's tools read once without the SDK's client (one ``tools/list`` on the
        direct-request path: see :meth:`call_tool`), checked tool by tool as for
        :meth:`list_tools` (:func:`~pegboard.mcp.listing.filter_tools`); None where that is
        not done, or when the answer is anything but one page (:meth:`list_tools` reads it).

        Every start lists its servers again and mostly finds them unchanged: the caller
        compares :attr:`SentListing.tools` with the cached listing, and only a changed one
        needs :meth:`SentListing.read` (the SDK client's reading: the result's schema check,
        the models and their dump). That reading costs about twice the parse and ~30 MB of
        short-lived heap at 5,000 tools, which the process keeps as free pages afterwards.
        """
        import mcp_types

        from pegboard.mcp.listing import ListingLog, filter_tools

        sdk = _call_names()
        session = await self.session()
        state, listing, version = self._state, self._listing, session.protocol_version
        caps = session.server_capabilities
        direct = state.direct if state is not None else None
        if direct is None or listing is None or caps is None or caps.tools is None:
            return None
        if sdk.tracing_on() or version is None or version in sdk.modern_versions:
            return None
        try:
            message = await direct.request("tools/list", {}, self.config.list_timeout)
        except TimeoutError as exc:
            raise ServerUnavailable(
                self.server_id, f"tools/list timed out after {self.config.list_timeout:g}s"
            ) from exc
        except sdk.mcp_error:
            return None  # the connection closed: list_tools says why
        if not isinstance(message, mcp_types.JSONRPCResponse):
            return None  # an error answer: list_tools reports it
        result = message.result
        if result.get("nextCursor") is not None or not isinstance(result.get("tools"), list):
            return None
        log = ListingLog(protocol_version=listing.protocol_version, checked=listing.checked)
        await anyio.to_thread.run_sync(filter_tools, result, log)
        self.failures = 0
        return SentListing(result, log.skipped, version)

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        call_timeout: float | None = None,
        output_schema: Mapping[str, Any] | None = None,
    ) -> mcp_types.CallToolResult | dict[str, Any]:
        """Call a tool; a successful result is checked against ``output_schema`` when given.
        A plain result (:func:`~pegboard.mcp.results.plain_result`) comes back as read, any
        other as the SDK's model.

        A plain ``tools/call`` request rather than ``ClientSession.call_tool``, which lists the
        server's tools first whenever this session has not listed the tool (see
        :func:`~pegboard.mcp.listing.structured_content_problem`). On a stdio server of the
        handshake era the request is written and its answer read without the SDK's client
        (:mod:`pegboard.mcp.direct`), the answer checked as the SDK checks it
        (:func:`_typed_result`); with tracing on, or on a 2026-07-28 session, the SDK's
        client sends it.
        """
        import mcp_types

        sdk = _call_names()
        session = await self.session()
        state = self._state
        limit = call_timeout or self.config.call_timeout
        version = session.protocol_version
        direct = state.direct if state is not None else None
        if sdk.tracing_on() or version is None or version in sdk.modern_versions:
            # A traced call carries its span to the server, a 2026-07-28 request its
            # envelope in _meta: the SDK's client writes both.
            direct = None
        try:
            answer: _Answer | None = None
            if direct is not None and version is not None:  # the timeout: a loop timer
                answer = await _direct_call(direct, name, arguments, version, limit)
            if answer is None:
                # anyio.fail_after's own steps, without its two generator-based context
                # managers and backend look-ups: the deadline's cancel is a timeout.
                clock = anyio.current_time
                timer = anyio.CancelScope(deadline=clock() + limit)
                with timer:
                    request = mcp_types.CallToolRequest(
                        params=mcp_types.CallToolRequestParams(name=name, arguments=arguments)
                    )
                    answer = await session.send_request(request, _call_results())
                if timer.cancelled_caught and clock() >= timer.deadline:
                    raise TimeoutError
            assert answer is not None
        except TimeoutError as exc:
            raise ServerUnavailable(
                self.server_id, f"tool {name!r} did not answer within {limit:g}s"
            ) from exc
        except sdk.mcp_error as exc:
            if exc.data == sdk.unreadable:  # an answer the parser refused (see framing)
                raise ToolExecutionError(
                    f"MCP server {self.server_id} answered tool {name!r} with an invalid result: "
                    f"{exc.message}",
                    tool_name=name,
                ) from exc
            raise self._request_failed(f"tool {name!r}", exc, state) from exc
        except (RuntimeError, sdk.validation_error) as exc:  # wrong-shaped or invalid result
            raise ToolExecutionError(
                f"MCP server {self.server_id} answered tool {name!r} with an invalid result: "
                f"{_first_line(exc)}",
                tool_name=name,
            ) from exc
        if isinstance(answer, mcp_types.InputRequiredResult):
            asked = ", ".join(
                f"{r.method} ({getattr(r.params, 'mode', None) or 'request'})"
                for r in (answer.input_requests or {}).values()
            )
            raise ToolExecutionError(
                f"MCP server {self.server_id} asked for input during tool {name!r} "
                f"({asked or 'a further round'}), which pegboard does not relay to the client "
                "yet; the call did not complete. Call a tool of that server that needs no "
                "input, or use the server directly from a client that can answer it.",
                tool_name=name,
            )
        result = answer
        if isinstance(result, dict):
            failed, structured = result.get("isError", False), result.get("structuredContent")
        else:
            failed, structured = result.is_error, result.structured_content
        if output_schema is not None and not failed:
            problem = sdk.structured_content_problem(output_schema, structured)
            if problem is not None:
                raise ToolExecutionError(
                    f"MCP server {self.server_id} answered tool {name!r} with an invalid "
                    f"result: {problem}",
                    tool_name=name,
                )
        self.failures = 0
        return result

    def _request_failed(self, what: str, exc: MCPError, state: TransportState | None) -> Exception:
        import mcp_types

        if exc.code != mcp_types.CONNECTION_CLOSED:
            return exc
        if state is not None:
            state.close("connection closed")
        reason = (state.reason if state else None) or "connection closed"
        return ServerUnavailable(self.server_id, f"{what} failed: {reason}")


async def _negotiate(session: ClientSession, protocol: str) -> None:
    """Open ``session`` in the server's era.

    ``auto``: the ``initialize`` handshake first, and ``server/discover`` (2026-07-28) only when
    the server refuses the handshake (an error answer: a modern-only server). Not the SDK's
    ``Client(mode="auto")`` order (discover first): an SDK server serves both eras, and on a
    2026-07-28 connection it drops the ``notifications/*/list_changed`` a server written for the
    handshake era sends on its session (they reach only ``subscriptions/listen`` streams, fed
    by ``ctx.notify_*_changed``), so its list changes would never arrive. ``modern``:
    ``server/discover`` only, for a dual-era server that announces changes only to listen
    streams. When discover is refused too, the handshake's error is the one raised.
    """
    from mcp.shared.exceptions import MCPError

    if protocol == "modern":
        await session.discover()  # retries once at a mutual version on -32022
        return
    try:
        await session.initialize()
    except MCPError as refused:
        try:
            await session.discover()
        except (MCPError, RuntimeError):  # RuntimeError: discover lists no version of ours
            raise refused from None


class _CallNames(NamedTuple):
    """What :meth:`McpConnection.call_tool` uses of the SDK and of the modules that load it,
    imported once (a dozen imports inside the method cost ~10 us on every call)."""

    mcp_error: type[MCPError]
    validation_error: type[ValidationError]
    modern_versions: frozenset[str]
    tracing_on: Callable[[], bool]
    unreadable: str
    structured_content_problem: Callable[[Mapping[str, Any], Any], str | None]
    not_json: type[Exception]
    clamp_ttl: Callable[[dict[str, Any]], None]
    later_fields: Callable[[str, str], frozenset[str]]


@functools.cache
def _call_names() -> _CallNames:
    from mcp.client.session import _clamp_inbound_ttl, _later_revision_fields
    from mcp.shared.exceptions import MCPError
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
    from pydantic import ValidationError

    from pegboard.core.tracing import tracing_on
    from pegboard.mcp.direct import NotJson
    from pegboard.mcp.framing import UNREADABLE
    from pegboard.mcp.listing import structured_content_problem

    return _CallNames(
        MCPError,
        ValidationError,
        frozenset(MODERN_PROTOCOL_VERSIONS),
        tracing_on,
        UNREADABLE,
        structured_content_problem,
        NotJson,
        _clamp_inbound_ttl,
        _later_revision_fields,
    )


class SentListing:
    """A ``tools/list`` answer as the server sent it (after the per-tool checks), and the
    tools those checks skipped; :meth:`read` reads it as the SDK's client does."""

    def __init__(self, result: dict[str, Any], skipped: list[tuple[str, str]], version: str):
        self._result, self.skipped, self._version = result, skipped, version
        self.tools: list[dict[str, Any]] = result["tools"]

    def read(self) -> list[dict[str, Any]]:
        """The tools as ``ClientSession.list_tools`` and :meth:`McpConnection.list_tools`
        make them: a negative ``ttlMs`` floored, the result checked against its version's
        schema, a later revision's fields dropped, validated, each tool dumped (raising
        pydantic's ``ValidationError`` as they do)."""
        import mcp_types
        from mcp_types.methods import validate_server_result

        sdk = _call_names()
        raw = self._result
        sdk.clamp_ttl(raw)
        with contextlib.suppress(KeyError):  # a version without a row for tools/list
            validate_server_result("tools/list", self._version, raw)
        if not (foreign := sdk.later_fields("tools/list", self._version)).isdisjoint(raw):
            raw = {key: value for key, value in raw.items() if key not in foreign}
        result = mcp_types.ListToolsResult.model_validate(raw, by_name=False)
        return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in result.tools]


_Answer: TypeAlias = "mcp_types.CallToolResult | mcp_types.InputRequiredResult | dict[str, Any]"


async def _direct_call(
    direct: DirectRequests, name: str, arguments: dict[str, Any], version: str, within: float
) -> _Answer | None:
    """``tools/call`` through ``direct`` (``TimeoutError`` after ``within`` seconds); None if the
    arguments are for the SDK to encode. A plain result
    (:func:`~pegboard.mcp.results.plain_result`) comes back as read."""
    import mcp_types

    sdk = _call_names()
    try:
        params = {"name": name, "arguments": arguments}
        message = await direct.request("tools/call", params, within)
    except sdk.not_json:
        return None
    if isinstance(message, dict):  # a plain result, as the SDK's models would take it
        return message
    if isinstance(message, mcp_types.JSONRPCError):
        error = message.error
        raise sdk.mcp_error(code=error.code, message=error.message, data=error.data)
    return _typed_result(message.result, version)


def _typed_result(
    raw: dict[str, Any], version: str
) -> mcp_types.CallToolResult | mcp_types.InputRequiredResult:
    """A ``tools/call`` result read as ``ClientSession.send_request`` reads it: a negative
    ``ttlMs`` floored, checked against ``version``'s result schema, a later revision's
    fields dropped, then validated (raising pydantic's ``ValidationError`` as it does)."""
    sdk = _call_names()
    sdk.clamp_ttl(raw)
    with contextlib.suppress(KeyError):  # a version without a row for tools/call
        _surface_result(version).validate_python(raw, by_name=False)
    if not (foreign := sdk.later_fields("tools/call", version)).isdisjoint(raw):
        raw = {key: value for key, value in raw.items() if key not in foreign}
    return _call_results().validate_python(raw, by_name=False)


@functools.cache
def _surface_result(version: str) -> TypeAdapter[Any]:
    """What the SDK's ``validate_server_result("tools/call", version, ...)`` checks a result
    against (its version's row), without the dump it makes and drops."""
    from mcp_types.methods import SERVER_RESULTS
    from pydantic import TypeAdapter

    row: Any = SERVER_RESULTS[("tools/call", version)]  # a model, or a union of models
    return TypeAdapter(row)


@functools.cache
def _call_results() -> TypeAdapter[mcp_types.CallToolResult | mcp_types.InputRequiredResult]:
    """A ``tools/call`` answer: a result, or (2026-07-28) a request for input."""
    import mcp_types
    from pydantic import TypeAdapter

    return TypeAdapter(mcp_types.CallToolResult | mcp_types.InputRequiredResult)


def _reason(exc: BaseException, stderr: StderrLog, transport_reason: str | None = None) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    from mcp.shared.exceptions import MCPError

    text = str(exc) or type(exc).__name__
    if transport_reason and isinstance(exc, MCPError):  # "Connection closed": say why
        text = transport_reason
    tail = stderr.text().strip().splitlines()[-1:] if stderr.text().strip() else []
    return f"{text}" + (f" (stderr: {tail[0][:200]})" if tail else "")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__

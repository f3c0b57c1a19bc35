"""Per-tool validation of ``tools/list`` results, between the transport and the SDK session.

The SDK validates a ``tools/list`` result as a whole, so one tool with a malformed schema fails
the listing of every tool on that server. :func:`filter_tool_listings` wraps a transport's
stream pair: it notes the ids of outgoing ``tools/list`` requests and, in their responses,
drops each tool that would not validate (recording why) so its siblings reach the session.
Schemas are checked against their draft's metaschema only; ``$ref`` is never resolved here,
and argument validation elsewhere uses an empty ``referencing.Registry`` so nothing is fetched.

A definition that passed before (its digest in :mod:`pegboard.mcp.checked`, kept across
starts) is not checked again, and the checks run in a worker thread: a 5,000-tool listing
neither costs seconds at every start nor holds the event loop (a ``tool_search`` sent meanwhile
is answered).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import TracebackType
from typing import Any

import anyio.to_thread
import mcp_types
import referencing
from anyio import ClosedResourceError, EndOfStream
from jsonschema.exceptions import best_match
from jsonschema.validators import Draft7Validator, validator_for
from mcp.client._transport import TransportStreams
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types.methods import validate_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from referencing.exceptions import Unresolvable

from pegboard.core.quick_check import quick_check
from pegboard.core.tool import canonical_json
from pegboard.mcp.checked import CheckedDefinitions, default_checked, definition_digest

DEFAULT_PROTOCOL_VERSION = "2025-11-25"
_LOCAL_ONLY: referencing.Registry[Any] = referencing.Registry()


@dataclass
class ListingLog:
    """Tools dropped from listings on one connection: ``(tool name, reason)``."""

    skipped: list[tuple[str, str]] = field(default_factory=list)
    protocol_version: str = DEFAULT_PROTOCOL_VERSION
    checked: CheckedDefinitions = field(default_factory=default_checked)
    _pending: dict[str | int, str] = field(default_factory=dict)
    # tools/list results handed to the session and not yet released (see release)
    _handed: list[dict[str, Any]] = field(default_factory=list)

    def release(self) -> None:
        """Empty the ``tools/list`` results handed to the session so far; call it once the
        session has read them. The SDK's receive loop keeps the last message it read until
        the next one arrives, which for a listing can be never (calls are answered past it):
        a 5,000-tool page held that way is ~12 MB of parsed JSON nobody reads again."""
        for result in self._handed:
            result.clear()
        self._handed.clear()


def tool_problem(raw: Any, protocol_version: str = DEFAULT_PROTOCOL_VERSION) -> str | None:
    """Why ``raw`` is not a usable tool definition, or None when it is."""
    if not isinstance(raw, Mapping):
        return "the definition is not an object"
    if not isinstance(raw.get("name"), str):
        return "the tool name is not a string"
    try:
        listed: dict[str, Any] = {"tools": [raw]}
        if protocol_version in MODERN_PROTOCOL_VERSIONS:
            listed.update(resultType="complete", ttlMs=0, cacheScope="private")
        validate_server_result("tools/list", protocol_version, listed)
        mcp_types.Tool.model_validate(raw, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"][2:]) or "tool"
        return f"invalid definition at {where}: {first['msg']}"
    except (ValueError, KeyError) as exc:
        return f"invalid definition: {_first_line(exc)}"
    for key in ("inputSchema", "outputSchema"):
        schema = raw.get(key)
        if schema is None:
            continue
        if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
            return f"{key} must be a JSON Schema object with type 'object'"
        problem = _metaschema_problem(canonical_json(schema))
        if problem is not None:
            return f"{key} is not a valid JSON Schema: {problem}"
    return None


@lru_cache(maxsize=4096)
def _metaschema_problem(schema_json: str) -> str | None:
    """Check a schema against its declared draft's metaschema (draft-07 when undeclared).

    Draft-07's metaschema is the default because it checks the same structure (keyword types,
    ``properties`` is an object of schemas, ...) about ten times faster than 2020-12's, whose
    ``$dynamicRef`` resolution costs milliseconds per tool: too slow for a 1,000-tool server.
    Newer keywords it does not know are allowed by it, as they should be. The explicit empty
    registry keeps every ``$ref`` local (the bundled metaschemas still resolve): nothing a
    server wrote can make us fetch a URL.
    """
    schema = json.loads(schema_json)
    cls = validator_for(schema, default=Draft7Validator)
    meta = cls(cls.META_SCHEMA, registry=_LOCAL_ONLY)
    error = best_match(meta.iter_errors(schema))
    return None if error is None else str(error.message)


def structured_content_problem(output_schema: Mapping[str, Any], structured: Any) -> str | None:
    """Why a successful result's structured content (None: it has none) does not match the
    tool's ``outputSchema``, or None.

    Done here, from the catalog's cached definition, instead of by the SDK's ``call_tool``: that
    one issues a hidden ``tools/list`` whenever the session has not listed the tool itself
    (every first call after a reconnect, every call of a tool beyond the first page), which
    costs a round trip and hangs the call when the server's listing hangs.
    """
    if structured is None:
        return "it has an output schema but returned no structured content"
    validator, quick = _validator_of(output_schema)
    if quick is not None and quick(structured):
        return None
    try:
        error = best_match(validator.iter_errors(structured))
    except Unresolvable as exc:
        return (
            f"its outputSchema has a $ref that does not resolve locally ({exc.ref}); "
            "remote references are never fetched"
        )
    except Exception as exc:  # a pattern that is not a regex, ...: the schema is at fault
        return f"its outputSchema cannot be checked: {_first_line(exc)}"
    return None if error is None else f"invalid structured content: {error.message}"


_Checks = tuple[Any, Callable[[Any], bool] | None]
_BY_IDENTITY: dict[int, tuple[Mapping[str, Any], _Checks]] = {}


def _validator_of(schema: Mapping[str, Any]) -> _Checks:
    """The validator of ``schema`` and its quick check
    (:func:`~pegboard.core.quick_check.quick_check`), found by the object itself while it is
    the catalog's (a cached definition is never changed in place: a change is a new
    definition), so a call does not serialize its tool's schema to find them; held, so its
    id stays its own."""
    held = _BY_IDENTITY.get(id(schema))
    if held is not None and held[0] is schema:
        return held[1]
    key = canonical_json(schema)
    checks = (_output_validator(key), quick_check(key))
    if len(_BY_IDENTITY) >= 1024:
        _BY_IDENTITY.clear()
    _BY_IDENTITY[id(schema)] = (schema, checks)
    return checks


@lru_cache(maxsize=1024)
def _output_validator(schema_json: str) -> Any:
    schema = json.loads(schema_json)
    return validator_for(schema, default=Draft7Validator)(schema, registry=_LOCAL_ONLY)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


class _Write:
    def __init__(self, inner: WriteStream[SessionMessage], log: ListingLog) -> None:
        self._inner = inner
        self._log = log

    async def send(self, item: SessionMessage, /) -> None:
        message = item.message
        if isinstance(message, mcp_types.JSONRPCRequest) and message.method in (
            "tools/list",
            "initialize",
        ):
            self._log._pending[message.id] = message.method
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Write:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


class _Read:
    def __init__(self, inner: ReadStream[SessionMessage | Exception], log: ListingLog) -> None:
        self._inner = inner
        self._log = log

    async def receive(self) -> SessionMessage | Exception:
        item = await self._inner.receive()
        if not isinstance(item, SessionMessage):
            return item
        if isinstance(item.message, mcp_types.JSONRPCError) and item.message.id is not None:
            self._log._pending.pop(item.message.id, None)
        elif isinstance(item.message, mcp_types.JSONRPCResponse):
            method = self._log._pending.pop(item.message.id, None)
            if method == "initialize":
                version = item.message.result.get("protocolVersion")
                if isinstance(version, str):
                    self._log.protocol_version = version
            elif method == "tools/list":
                await anyio.to_thread.run_sync(filter_tools, item.message.result, self._log)
                self._log._handed.append(item.message.result)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Read:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except (EndOfStream, ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Read:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


def filter_tools(result: dict[str, Any], log: ListingLog) -> None:
    """Drop from a ``tools/list`` result each tool :func:`tool_problem` refuses (noted in
    ``log.skipped``); definitions ``log.checked`` has seen pass are kept unchecked."""
    tools = result.get("tools")
    if not isinstance(tools, list):
        return
    kept = []
    version, checked = log.protocol_version, log.checked
    for raw in tools:
        digest = definition_digest(raw, version)
        if digest is not None and checked.passed(digest):
            kept.append(raw)
            continue
        problem = tool_problem(raw, version)
        if problem is None:
            kept.append(raw)
            if digest is not None:
                checked.add(digest)
        else:
            name = raw.get("name") if isinstance(raw, Mapping) else None
            log.skipped.append((str(name or "<unnamed>"), problem))
    result["tools"] = kept


def filter_tool_listings(streams: TransportStreams, log: ListingLog) -> TransportStreams:
    read, write = streams
    return _Read(read, log), _Write(write, log)

"""What the catalog knows about one server: cached tools, state, backoff, the refresh in flight."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from pegboard.core.definition import ToolDefinition
from pegboard.core.names import mcp_tool_name_problem
from pegboard.core.tool import canonical_json
from pegboard.errors import public_reason
from pegboard.mcp.cached import cached_definition
from pegboard.mcp.config import McpServerConfig
from pegboard.mcp.connection import McpConnection
from pegboard.mcp.pins import (
    check_trust,
    definition_text,
    launch_pending,
    text_hash,
    unmatched_gate,
)
from pegboard.mcp.poison import ToolFlags, has_invisible
from pegboard.mcp.store import StoredServer, StoredState

if TYPE_CHECKING:  # the status record is made for `servers status`, not for a listing's read
    from pegboard.mcp.status import ServerState, ServerStatus

logger = logging.getLogger("pegboard.mcp.catalog")


def tool_hash(raw: dict[str, Any]) -> str:
    """sha256 of a tool's canonical MCP definition (what approvals bind to)."""
    return hashlib.sha256(canonical_json(raw).encode("utf-8")).hexdigest()


def differs(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]) -> bool:
    """Whether two tool lists differ in content (the canonical JSON of each item, item by item:
    the same answer as comparing the whole lists' JSON, without two copies of it at once)."""
    return len(before) != len(after) or any(
        canonical_json(a) != canonical_json(b) for a, b in zip(before, after, strict=True)
    )


class Flight:
    """One refresh in progress; concurrent callers wait for its outcome."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self._tools: list[ToolDefinition] = []
        self._error: BaseException | None = None

    def finish(self, tools: list[ToolDefinition]) -> None:
        self._tools = tools
        self.done.set()

    def fail(self, error: BaseException) -> None:
        self._error = error
        self.done.set()

    async def result(self) -> list[ToolDefinition]:
        await self.done.wait()
        if self._error is not None:
            raise self._error
        return list(self._tools)


class _Derived:
    """The input of one :meth:`ServerEntry._set_tools` run and what it added to the pins."""

    def __init__(
        self,
        raw: tuple[dict[str, Any], ...],
        listed: tuple[dict[str, Any], ...] | None,
        raw_json: str | None,
        pins: dict[str, str],
        config: McpServerConfig,
        new_pins: dict[str, str],
        launch_changed: bool,
    ) -> None:
        # A digest, not the JSON itself: a whole listing's JSON is 8 MB at 5,000 tools.
        self.raw, self.listed, self._raw_digest = raw, listed, _json_digest(raw_json)
        self.pins, self.config = pins, config
        self.new_pins, self.launch_changed = dict(new_pins), launch_changed
        self.pins_after = pins | new_pins

    def same_input(
        self,
        raw: tuple[dict[str, Any], ...],
        raw_json: str | None,
        pins: dict[str, str],
        config: McpServerConfig,
    ) -> bool:
        # The pins it was given, or those plus its own first-sight pins (read back from the
        # store after the listing was persisted): both decide the same.
        if config is not self.config or (pins != self.pins and pins != self.pins_after):
            return False
        if raw is self.raw or raw is self.listed:  # the listed tools give what they came from
            return True
        if raw_json is None:
            return False
        if self._raw_digest is None:
            self._raw_digest = _json_digest(canonical_json(list(self.raw)))
        return _json_digest(raw_json) == self._raw_digest


def _json_digest(text: str | None) -> bytes | None:
    if text is None:
        return None
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class ServerEntry:
    def __init__(
        self,
        config: McpServerConfig,
        connection: McpConnection,
        on_state: Callable[[str], None] = lambda server_id: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self._clock = clock
        self.connection = connection
        self._on_state = on_state
        self.enabled = config.enabled
        self.raw: tuple[dict[str, Any], ...] | None = None
        self.tools: tuple[ToolDefinition, ...] | None = None
        self.by_name: dict[str, ToolDefinition] = {}  # the tools by name (a call's look-up)
        self.visible: tuple[ToolDefinition, ...] = ()
        self._tool_hashes: dict[str, str] | None = {}
        self.fetched_at: float | None = None
        self.state: ServerState = "cold" if config.enabled else "disabled"
        self.error: str | None = None
        self.at: float | None = None
        self.backoff_until: float | None = None
        self.attempted = False
        self.flight: Flight | None = None
        # Trust (see pegboard.mcp.pins): pinned hashes, tools waiting for trust and why,
        # first-sight pins not yet written, and poisoning flags per tool name.
        self.pins: dict[str, str] = {}
        self.pending: dict[str, str] = {}
        self.new_pins: dict[str, str] = {}
        self.launch_changed = False
        self._kept: list[dict[str, Any]] = []  # the listed tools that were kept
        self._flags = ToolFlags(())
        # Kept tools whose definition holds a tag, zero-width or bidi character: the registry
        # strips those (pegboard.mcp.sync); every other tool is taken as it is.
        self.invisible: frozenset[str] = frozenset()
        self.gate_error: str | None = None  # a force_prompt_tools entry naming no listed tool
        # Tools listed under a name pegboard refuses (see mcp_tool_name_problem): name, reason.
        self.refused: tuple[tuple[str, str], ...] = ()
        # What the last _set_tools was given and made, so that the same input again (a
        # re-list of an unchanged server, pins read back unchanged) costs no work: at 5,000
        # tools that work (names, definitions, two hashes a tool) is about a second.
        self._derived: _Derived | None = None

    @property
    def flags(self) -> ToolFlags:
        """Poisoning flags per tool name (:func:`~pegboard.mcp.poison.poison_flags`), each
        tool checked on its first read: listing needs none."""
        return self._flags

    @property
    def tool_hashes(self) -> dict[str, str]:
        """tool name -> :func:`tool_hash` of its raw definition (made on first read)."""
        if self._tool_hashes is None:
            self._tool_hashes = {item["name"]: tool_hash(item) for item in self._kept}
        return self._tool_hashes

    def set_pins(self, pins: dict[str, str]) -> bool:
        """Take the store's pins; True if what is visible changed."""
        before = self.visible
        self.pins = dict(pins)
        self.launch_changed = launch_pending(self.pins, self.config.fingerprint)
        if self.raw is not None:
            self._set_tools(self.raw)
        elif self.launch_changed:
            self.pending = {}
        return before != self.visible

    # -- cache --------------------------------------------------------------------------------
    def load(self, record: StoredServer | None, state: StoredState | None) -> None:
        """Take the stored tool list (shared) and what this replica last saw (its own)."""
        if state is not None:
            self.error, self.at, self.backoff_until = (
                public_reason(state.error) if state.error else None,
                state.error_at,
                state.backoff_until,
            )
            if state.status == "failed" and state.error and self.enabled:
                self.state = "failed"
        self.attempted = (record is not None and record.tools is not None) or self.error is not None
        if record is not None and record.tools is not None:
            self._set_tools(record.tools)
            self.fetched_at = record.fetched_at

    def _set_tools(self, raw: tuple[dict[str, Any], ...], raw_json: str | None = None) -> None:
        """Derive the tools, trust and visibility of ``raw`` under the current pins and
        config; ``raw_json``: ``canonical_json(list(raw))`` if the caller has it."""
        derived = self._derived
        if derived is not None and derived.same_input(raw, raw_json, self.pins, self.config):
            # Deterministic in (raw, pins, config): the attributes it set still hold, but
            # for the pins and first-sight pins it adds (set_pins replaced, persist took them).
            self.pins.update(derived.new_pins)
            self.new_pins.update(derived.new_pins)
            self.launch_changed = derived.launch_changed
            return
        pins_in = dict(self.pins)
        parsed: dict[str, ToolDefinition] = {}
        kept: list[dict[str, Any]] = []
        listed: list[dict[str, Any]] = []  # kept and refused: what the cache keeps
        refused: list[tuple[str, str]] = []
        for item in raw:
            name = item.get("name")
            if (problem := mcp_tool_name_problem(name)) is not None:
                if isinstance(name, str):  # kept in the cache, so `servers status` shows why
                    refused.append((name, problem))
                    listed.append(item)
                logger.warning("MCP server %s: refusing a tool: %s", self.config.id, problem)
                continue
            try:
                tool = cached_definition(item)
            except ValueError as exc:
                logger.warning(
                    "MCP server %s: dropping an unreadable tool: %s", self.config.id, exc
                )
                continue
            if tool.name in parsed:
                continue  # a server listing one name twice: the first definition wins
            parsed[tool.name] = tool
            kept.append(item)
            listed.append(item)
        self.raw = tuple(listed)
        self.refused = tuple(refused)
        self.tools = tuple(parsed.values())
        self.by_name = parsed
        # One canonical text a tool: its pin hash, and whether it hides characters.
        texts = {item["name"]: definition_text(item) for item in kept}
        pinned = {name: text_hash(text) for name, text in texts.items()}
        self.invisible = frozenset(name for name, text in texts.items() if has_invisible(text))
        gates = self.config.force_prompt_tools - self.config.disabled_tools
        self.gate_error = unmatched_gate(gates, pinned)
        trust = check_trust(self.pins, pinned, self.config.fingerprint, hold_first=self.gate_error)
        self.launch_changed, self.pending = trust.launch_changed, trust.pending
        if not trust.launch_changed:
            self.pins.update(trust.new_pins)
            self.new_pins.update(trust.new_pins)
        self._kept, self._flags, self._tool_hashes = kept, ToolFlags(kept), None
        self.visible = tuple(
            t
            for t in self.tools
            if not self.config.is_tool_disabled(t.name) and t.name not in self.pending
        )
        self._derived = _Derived(
            raw, self.raw, raw_json, pins_in, self.config, trust.new_pins, self.launch_changed
        )

    @property
    def has_cached_listing(self) -> bool:
        """Whether tools were derived from a listing (cached or live) that is still held."""
        return self._derived is not None

    def lists_as_cached(self, raw: Sequence[dict[str, Any]], raw_json: str) -> bool:
        """Whether a listing (``raw_json``: its :func:`canonical_json`) is the input the
        cached tools were derived from, under the same pins and config: taking it changes
        nothing."""
        derived = self._derived
        return derived is not None and derived.same_input(
            tuple(raw), raw_json, self.pins, self.config
        )

    def accept(
        self,
        raw: list[dict[str, Any]],
        now: float,
        empty_backoff: float,
        raw_json: str | None = None,
    ) -> bool:
        """Store a successful listing; True when the content differs from the cached one.
        ``raw_json``: ``canonical_json(raw)``, if the caller made it.

        A listing equal to the cached one (every start lists its servers again) keeps the
        cached objects, which the registry's tools share, and drops the new ones: the same
        definitions are held once, not twice.
        """
        before = self.raw or ()
        raw_json = canonical_json(raw) if raw_json is None else raw_json
        self._set_tools(tuple(raw), raw_json)
        self.fetched_at = now
        self.attempted = True
        self.error = None
        self.backoff_until = None if self.raw else now + empty_backoff
        self.set_state("connected" if self.connection.connected else self.state)
        if before is self.raw:  # the same input as before: the same listed tools
            return False
        return differs(before, self.raw or ())

    def adopt(self, record: StoredServer) -> bool:
        """Take the tool list another process stored (a replica's refresh); True when it
        differs from the cached one. This replica's state and error stay its own."""
        if record.tools is None:
            return False
        if self.raw is not None and not differs(self.raw, record.tools):
            return False
        self._set_tools(record.tools)
        self.new_pins = {}  # whoever stored the list wrote its first-sight pins
        self.fetched_at = record.fetched_at
        self.attempted = True
        return True

    def forget(self) -> bool:
        """Drop the cached list, its error and backoff (back to never-warmed); True if the
        list was non-empty."""
        had_tools = bool(self.raw)
        self.raw = self.tools = None
        self.by_name = {}
        self._derived = None
        self.visible = ()
        self.invisible = frozenset()
        self._tool_hashes = {}
        self.fetched_at = self.backoff_until = None
        self.attempted = False
        self.set_state("connected" if self.connection.connected else "cold")
        self.error = None
        return had_tools

    def fail(self, error: str, now: float, backoff_until: float) -> None:
        error = public_reason(error)  # status lines and prompts never carry server text
        self.attempted = True
        self.error = error
        self.backoff_until = backoff_until
        self.set_state("failed", error)

    def is_due(self, now: float, interval: float) -> bool:
        """Whether a periodic refresh should re-list this server now."""
        if self.flight is not None or (self.backoff_until is not None and now < self.backoff_until):
            return False
        return self.fetched_at is None or now - self.fetched_at >= interval

    def record(self) -> StoredServer:
        return StoredServer(
            server_id=self.config.id,
            fingerprint=self.config.fingerprint,
            tools=self.raw,
            tool_hashes=dict(self.tool_hashes),
            fetched_at=self.fetched_at,
        )

    def state_record(self) -> StoredState:
        return StoredState(
            server_id=self.config.id,
            fingerprint=self.config.fingerprint,
            status=self.state,
            error=self.error,
            error_at=self.at if self.error else None,
            backoff_until=self.backoff_until,
        )

    # -- state --------------------------------------------------------------------------------
    def set_state(self, state: ServerState, error: str | None = None) -> None:
        if not self.enabled:
            state = "disabled"
        if state != "failed":
            error = None
        changed = (state, error) != (self.state, self.error if self.state == "failed" else None)
        if changed:
            self.at = self._clock()
        self.state = state
        if state == "failed":
            self.error = error
        if changed:
            self._on_state(self.config.id)

    def status(self) -> ServerStatus:
        from pegboard.mcp.status import ServerStatus

        return ServerStatus(
            server_id=self.config.id,
            name=self.config.display_name,
            state=self.state,
            error=self.error if self.state == "failed" else None,
            at=self.at,
            tool_count=len(self.visible),
            fetched_at=self.fetched_at,
            pending_trust=tuple(sorted(self.pending)),
            launch_changed=self.launch_changed,
            gate_error=self.gate_error,
            tool_flags=self.flags,
            refused=self.refused,
            backoff_until=self.backoff_until,
        )

    def begin_flight(self) -> Flight:
        self.flight = Flight()
        return self.flight

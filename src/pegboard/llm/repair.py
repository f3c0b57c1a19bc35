"""Tool-call repair: fix a call whose arguments failed validation, once, or give up.

Only invalid arguments are repaired; an unknown tool name never is (the model gets "did you
mean" suggestions instead). Free fixes come first and cost no model call: a double-encoded
JSON string, an ``{"arguments": ...}`` envelope (unless the schema itself has an ``arguments``
field), and what a tolerant JSON parser accepts (trailing commas, single quotes, a missing
brace). Then exactly one structured-output call gets the tool name, its schema, the original
arguments and the validation error. Every candidate is validated against the schema; nothing
invalid is ever returned, and on any failure the answer is ``None``: the model then reads the
original error. A repaired call goes back through the normal path, so approval sees (and the
human approves) the repaired arguments.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pegboard.core.entry import ToolEntry
from pegboard.core.schema import validate_arguments
from pegboard.errors import (
    InvalidToolArguments,
    ModelError,
    OptionalDependencyMissing,
    PegboardError,
    SchemaError,
)
from pegboard.formats.calls import ToolCall
from pegboard.llm.types import Message, ModelClient

logger = logging.getLogger("pegboard.llm.repair")

DEFAULT_MAX_MODEL_REPAIRS_PER_TURN = 3
_ENVELOPE = "arguments"
_INSTRUCTIONS = (
    "A tool call failed because its arguments do not match the tool's input schema. Return "
    "the corrected arguments as one JSON object that matches the schema and keeps the "
    "caller's intent. Do not invent values the original arguments do not imply; leave "
    "optional fields out rather than guess."
)


@dataclass(slots=True)
class RepairStats:
    """Counters since the repairer was made."""

    attempts: int = 0  # calls with invalid arguments handed to repair
    free_fixes: int = 0  # fixed without a model call
    model_calls: int = 0
    model_fixes: int = 0  # fixed by the model's answer
    capped: int = 0  # not sent to the model: the turn's cap was reached

    @property
    def successes(self) -> int:
        return self.free_fixes + self.model_fixes


class Repairer:
    """Repairs invalid tool-call arguments (see the module docstring).

    Call :meth:`repair` with the raw arguments, or use the object itself as the
    dispatcher's repair hook. At most ``max_model_repairs_per_turn`` calls go to the model
    between two :meth:`new_turn` calls (free fixes are not counted). ``client=None``
    makes only free fixes.
    """

    def __init__(
        self,
        client: ModelClient | None,
        *,
        max_model_repairs_per_turn: int = DEFAULT_MAX_MODEL_REPAIRS_PER_TURN,
    ) -> None:
        self.client = client
        self.max_model_repairs_per_turn = max_model_repairs_per_turn
        self.stats = RepairStats()
        self._turn_model_calls = 0

    def new_turn(self) -> None:
        """Start a new model turn: the per-turn cap counts from zero again."""
        self._turn_model_calls = 0

    async def __call__(
        self, entry: ToolEntry, call: ToolCall, error: PegboardError
    ) -> dict[str, Any] | None:
        """The dispatcher's ``RepairHook``: repair ``call``'s arguments as the model sent them."""
        raw: str | Mapping[str, Any] | None = (
            call.raw_arguments if call.parse_error is not None else call.arguments
        )
        return await self.repair(entry, raw, error)

    async def repair(
        self,
        entry: ToolEntry,
        raw_arguments: str | Mapping[str, Any] | None,
        error: PegboardError | str,
    ) -> dict[str, Any] | None:
        """Arguments for ``entry`` that validate, fixed from ``raw_arguments``, or ``None``.

        ``error`` is the validation failure (an :class:`InvalidToolArguments`, or its text);
        any other error (an unknown tool, a denied approval) is not repaired.
        """
        if not isinstance(error, InvalidToolArguments | str):
            return None
        schema = entry.tool.input_schema
        self.stats.attempts += 1
        try:
            for candidate in _candidates(raw_arguments, schema):
                if _valid(schema, candidate, entry.name):
                    self.stats.free_fixes += 1
                    return candidate
        except SchemaError:
            return None  # the tool's schema is broken: nothing can validate against it
        if self.client is None:
            return None
        if self._turn_model_calls >= self.max_model_repairs_per_turn:
            self.stats.capped += 1
            logger.info(
                "repair of %s skipped: %d model repairs this turn",
                entry.name,
                self._turn_model_calls,
            )
            return None
        self._turn_model_calls += 1
        return await self._ask_model(entry, raw_arguments, str(error))

    async def _ask_model(
        self, entry: ToolEntry, raw: str | Mapping[str, Any] | None, error: str
    ) -> dict[str, Any] | None:
        assert self.client is not None
        schema = entry.tool.input_schema
        shown = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=str)
        prompt = (
            f"Tool: {entry.name}\n"
            f"Description: {entry.tool.description}\n"
            f"Input schema: {json.dumps(schema, ensure_ascii=False, default=str)}\n"
            f"Original arguments: {shown}\n"
            f"Validation error: {error}"
        )
        self.stats.model_calls += 1
        try:
            answer = await self.client.structured(
                [Message.system(_INSTRUCTIONS), Message.user(prompt)],
                schema=schema,
                name=entry.name,
            )
        except ModelError as exc:
            logger.warning("repair of %s: the model call failed: %s", entry.name, exc)
            return None
        for candidate in _candidates(answer, schema):
            if _valid(schema, candidate, entry.name):
                self.stats.model_fixes += 1
                return candidate
        logger.info("repair of %s: the model's answer is still invalid", entry.name)
        return None


def create_repair(
    client: ModelClient | None,
    *,
    max_model_repairs_per_turn: int = DEFAULT_MAX_MODEL_REPAIRS_PER_TURN,
) -> Repairer:
    """A :class:`Repairer` using ``client`` for the one structured-output call."""
    return Repairer(client, max_model_repairs_per_turn=max_model_repairs_per_turn)


def _valid(schema: Mapping[str, Any], args: dict[str, Any], name: str) -> bool:
    try:
        validate_arguments(schema, args, tool_name=name)
    except InvalidToolArguments:
        return False
    return True


def _candidates(raw: Any, schema: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Objects ``raw`` may have meant, cheapest reading first."""
    for value in _decodings(raw):
        yield value
        inner = value.get(_ENVELOPE)
        if len(value) == 1 and inner is not None and not _declares(schema, _ENVELOPE):
            yield from _decodings(inner)


def _decodings(raw: Any) -> Iterator[dict[str, Any]]:
    if isinstance(raw, Mapping):
        yield dict(raw)
        return
    if not isinstance(raw, str) or not raw.strip():
        return
    for parse in (json.loads, _tolerant_loads):
        try:
            value = parse(raw)
            if isinstance(value, str):  # double-encoded: a JSON string holding the object
                value = parse(value)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            yield value


def _tolerant_loads(text: str) -> Any:
    try:
        import json_repair
    except ImportError as exc:
        raise OptionalDependencyMissing("Tool-call repair", "llm") from exc
    return json_repair.loads(text)


def _declares(schema: Mapping[str, Any], name: str) -> bool:
    properties = schema.get("properties")
    return isinstance(properties, Mapping) and name in properties
